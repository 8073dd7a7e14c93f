"""Shared bits of the thin CLIs in scripts/: report errors cleanly. The package is installed (``pip install -e .``;
under ``--software-deployment-method conda`` the workflow puts the repository on PYTHONPATH)."""
import os
import sys

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
