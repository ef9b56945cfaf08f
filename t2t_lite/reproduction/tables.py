"""t2t-compare's one entry: a table request goes to the pipeline of its kind.

Parsing problems make the Transformer paper's Table 4 (`parsing_table`),
translation rows Table 3 or Table 7 (`translation_compare`), and every other
entry the UT paper's algorithmic, Learning to Execute and bAbI tables
(`comparison`). Each takes the same `runs.Request`.
"""

from t2t_lite.reproduction import comparison, parsing_table, runs, translation, translation_compare


def compare(request: runs.Request) -> str:
    """The table `request` asks for -> its markdown (also output_dir/table.md)."""
    if parsing_table.is_parsing(request.problems):
        return parsing_table.compare(request)
    if request.search != runs.DEFAULT_SEARCH:  # set, and no table here would read it
        raise ValueError(
            f"--decode_hparams={request.search}: only parsing tables take a search; "
            "translation rows decode as each row says (the paper's beam 4, alpha 0.6, or "
            "the row's own) and algorithmic tables greedily; t2t-decode --decode_hparams "
            "decodes a run with any search"
        )
    if translation.is_translation(request.models):
        if request.config.keep_best:
            raise ValueError(
                "--keep_best: for the algorithmic and Learning to Execute tables, "
                "not translation rows"
            )
        return translation_compare.compare(request)
    return comparison.compare(request)
