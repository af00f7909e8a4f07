"""Checkpoints: a shadow git repository, the operation journal, undo and restore.

Import the parts you need (``monkey.checkpoints.guard``, ``monkey.checkpoints.api``);
nothing here imports git until a checkpoint or an undo actually happens.
"""
