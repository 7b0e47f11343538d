"""Models of the children app."""
