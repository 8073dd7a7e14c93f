"""fairseq ``--user-dir`` plugin of the fastdec workflow.

Pass ``--user-dir <path to this folder>`` to fairseq-train and fairseq-generate. The module is imported
under its folder name (``fastdec_fairseq``), which is also its installed package name, so fairseq's
``import_user_module`` and ``import fastdec_fairseq`` register each model/task/criterion exactly once.
"""
import importlib
import pkgutil
import os

_here = os.path.dirname(__file__)
for _sub in ("models", "tasks", "criterions"):
    for _mod in pkgutil.iter_modules([os.path.join(_here, _sub)]):
        if not _mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{_sub}.{_mod.name}")

PLUGIN_DIR = _here
