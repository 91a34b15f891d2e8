"""`python -m thrust_app` is the `thrust` command."""

from thrust_app.cli import main

raise SystemExit(main())
