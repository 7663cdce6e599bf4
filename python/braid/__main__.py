from braid.cli import main

raise SystemExit(main())
