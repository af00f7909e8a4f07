"""Screens the app pushes: approval dialog, checkpoint timeline, session picker (import each module directly)."""
