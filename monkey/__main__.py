"""``python -m monkey``."""

from monkey.cli import main

raise SystemExit(main())
