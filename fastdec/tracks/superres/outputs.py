"""Writes one table or figure of the super-resolution track (``fastdec tables superres NAME``)."""
from __future__ import annotations

from fastdec.layout import ResultsLayout
from fastdec.tracks.superres.plan import TGT, data_file, label, runs, section, tokens


def make_table(name: str, config: dict, R: str, output: str) -> None:
    from fastdec.bench.results import read_run
    from fastdec.text import read_lines
    from fastdec.tracks.superres import tables as T

    sr, L = section(config), ResultsLayout(R)
    by_variant = {variant: read_run(L.run(run)) for run, (variant, _) in runs(sr).items()}
    title = config.get("experiment", "")
    if name == "stern_table2":
        truth = read_lines(data_file(R, "valid", TGT))
        out = T.table2(by_variant, sr["block_sizes"], sr["epsilon"], truth, tokens(sr),
                       lambda k, eps: label(sr, k, eps))
    else:
        out = T.figure4_table(by_variant.get("finetune"), sr["block_sizes"], sr["epsilon"],
                              lambda k, eps: label(sr, k, eps))
        if output.endswith(".png"):
            return T.plot_figure4(out, output, title=title)
    out.to_csv(output, index=False)
    print(out.to_string(index=False), flush=True)
