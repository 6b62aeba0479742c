"""The one base of every error imagenot reports to its user.

Library code raises these with a message that names the file, row or field and what was
expected; the command line turns them into one line and exit status 1 (a traceback with -v).
"""


class ImagenotError(Exception):
    """A problem with the user's input, configuration or run folder, explained in its message."""
