"""Shared bits of the thin CLIs in scripts/: make the repo importable and report errors cleanly."""
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")


def run_cli(main):
    """Run ``main()``; known input errors print one clear line and exit 2 instead of a traceback."""
    from fastdec.data.download import DownloadError
    from fastdec.data.parallel import CorpusError

    try:
        sys.exit(main())
    except (CorpusError, DownloadError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
