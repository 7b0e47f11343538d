"""Models of the notifications app."""
