"""The demo's own parts: the loopback image server its synthetic corpus's URLs point at."""
