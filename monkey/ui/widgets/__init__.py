"""The main screen's widgets, one per module."""
