"""Models of the configuration app."""
