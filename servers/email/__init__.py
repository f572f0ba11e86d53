"""A generated mailbox with search and read tools; questions whose answer is in exactly one email."""
