"""User-facing errors: one line saying what is wrong and how to fix it; the CLI prints it without a traceback."""


class UserError(Exception):
    """A problem with the user's input or environment, with the fix in the message."""
