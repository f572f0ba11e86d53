"""A seeded warehouse (items, stock, prices) with lookup and stock-update tools."""
