"""``python -m jaxrl``: the ``jaxrl`` command (:mod:`jaxrl.cli`)."""

from jaxrl.cli import main

raise SystemExit(main())
