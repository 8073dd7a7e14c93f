"""Number formatting of the Markdown report's tables."""
import pandas as pd

from fastdec.report.markdown import df_to_markdown


def test_counts_with_gaps_print_as_integers_and_floats_keep_two_decimals():
    df = pd.DataFrame({"sentences": [1000, None], "bleu": [21.456, 20.0], "s_per_token": [0.00123, 0.5],
                       "system": ["a|b", "c"]})
    assert df["sentences"].dtype.kind == "f"  # pandas turns a count column with a gap into floats
    lines = df_to_markdown(df).splitlines()
    assert lines[0] == "| sentences | bleu | s_per_token | system |"
    assert lines[2] == "| 1000 | 21.46 | 0.0012 | a\\|b |"
    assert lines[3] == "| – | 20.00 | 0.50 | c |"
