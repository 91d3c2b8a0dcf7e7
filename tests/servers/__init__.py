"""Small HTTP servers the target tests talk to over real sockets."""
