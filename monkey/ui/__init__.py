"""monkey's Textual app. Only this package imports textual; the core never imports it."""
