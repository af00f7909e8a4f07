"""Helpers the tests import (conftest.py files hold fixtures only): the ``monkey`` CLI run in a
process or in-process (:mod:`tests.support.cli`)."""
