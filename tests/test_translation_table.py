"""t2t-compare's translation rows: Table 3 / Table 7 at small scale."""

import dataclasses
import json
import os
import pathlib
import shutil

import pytest
import sacrebleu
from test_text_problems import generate, write_corpus

from t2t_lite import checkpoints, experiment, run_dir
from t2t_lite.decoding import runner
from t2t_lite.reproduction import comparison, runs, translation, translation_compare
from t2t_lite.training.config import TrainConfig

SMALL = "hidden_size=16,filter_size=32,num_heads=2,num_hidden_layers=1,batch_size=512"


@pytest.mark.slow
def test_decode_only_rows_reuse_the_base_runs_and_bleu_is_sacrebleus_on_raw_text(tmp_path):
    write_corpus(tmp_path)
    _, data_dir, _ = generate(tmp_path)
    out = str(tmp_path / "o")
    config = TrainConfig(train_steps=6, local_eval_frequency=3, save_checkpoints_steps=1)
    models = ["t3_base", "t3_greedy", "t3_average5"]
    table = translation_compare.compare(
        runs.Request(out, models, ["translate_from_files"], data_dir, config, hparams=SMALL)
    )
    run = os.path.join(out, "translate_from_files", "t3_base")
    # One training run; the greedy and averaged rows decode it.
    assert sorted(os.listdir(os.path.join(out, "translate_from_files"))) == ["t3_base"]
    assert os.path.exists(os.path.join(run, "averaged", "model.ckpt-6.index"))
    main, versus = table.split("\n\n")
    lines = main.splitlines()
    assert [line.split(" | ")[1] for line in lines[2:]] == [
        translation.TABLE3[key].label for key in models
    ]
    # Then the decode-only rows against the base, on its one run.
    assert [line.split(" | ")[0][2:] for line in versus.splitlines()[2:]] == [
        translation.TABLE3[key].label for key in models[1:]
    ]
    assert all(line.endswith("| - / one seed |") for line in versus.splitlines()[2:])
    assert lines[2].endswith("| 4.92 | 25.8 |")  # the paper's base row
    assert lines[2].split(" | ")[3] == "6"  # the steps it trained, and for how long:
    seconds = json.loads(
        (tmp_path / "o" / "translate_from_files" / "t3_base" / "train_time.json").read_text()
    )
    assert lines[2].split(" | ")[4] == f"{seconds['6'] / 60:.1f}"
    assert lines[3].split(" | ")[5] == "-"  # a decode-only row has no perplexity of its own
    # The greedy row's BLEU, recomputed: greedy decodes of the dev inputs against the
    # dev file's own target text (not the model's detokenized ids).
    problem, model, _ = run_dir.open_run(run)
    pairs = [line.split("\t") for line in (tmp_path / "dev.tsv").read_text().splitlines()]
    pairs = [p for p in pairs if len(p) == 2]
    decoder = runner.make_decoder(model, "beam_size=1")
    outputs = decoder.decode_ids([problem.encode_text(s) for s, _ in pairs])
    hypotheses = [problem.decode_text(o[0][0]) for o in outputs]
    expected = sacrebleu.corpus_bleu(hypotheses, [[t for _, t in pairs]]).score
    assert lines[3].split(" | ")[6] == f"{expected:.1f}"
    # A rerun reuses the run and its decodes.
    kept = os.path.getmtime(os.path.join(run, "bleu_last_beam_size=1_dev.json"))
    again = translation_compare.compare(
        runs.Request(out, models, ["translate_from_files"], data_dir, config, hparams=SMALL)
    )
    assert again == table
    assert os.path.getmtime(os.path.join(run, "bleu_last_beam_size=1_dev.json")) == kept
    # Read while other rows train: a row without a finished run is left out and named,
    # and nothing trains (no run directory appears for it).
    partial = translation_compare.compare(
        runs.Request(
            out,
            ["t3_smoothing0", *models],
            ["translate_from_files"],
            data_dir,
            config,
            hparams=SMALL,
            missing="skip",
        ),
    )
    assert partial == table + (
        "\n\nNot finished, left out (--missing=skip): translate_from_files t3_smoothing0."
    )
    assert sorted(os.listdir(os.path.join(out, "translate_from_files"))) == ["t3_base"]
    # With records: every printed figure is kept, and the table outlives its runs.
    kept = str(tmp_path / "records")
    assert (
        translation_compare.compare(
            runs.Request(
                out,
                models,
                ["translate_from_files"],
                data_dir,
                config,
                hparams=SMALL,
                records_dir=kept,
            )
        )
        == table
    )
    assert sorted(os.listdir(os.path.join(kept, "dev"))) == sorted(models)
    shutil.rmtree(os.path.join(out, "translate_from_files"))
    # The same data written elsewhere (new files, new write times) is the same data.
    copy = str(tmp_path / "data_copy")
    shutil.copytree(data_dir, copy, copy_function=shutil.copyfile)
    # A run whose every row is recorded is not trained again (the default, --missing=train).
    recalled = translation_compare.compare(
        runs.Request(
            out, models, ["translate_from_files"], copy, config, hparams=SMALL, records_dir=kept
        )
    )
    assert recalled == table + (
        f"\n\nRead from records ({kept}; their runs are not here): t3_base; t3_greedy; t3_average5."
    )
    assert not os.path.exists(os.path.join(out, "translate_from_files", "t3_base"))
    # Other data, or another budget, reads none of them: the runs are left out.
    for other_data, steps in ((copy, 7), (_changed(copy, tmp_path), 6)):
        other = dataclasses.replace(config, train_steps=steps)
        none = translation_compare.compare(
            runs.Request(
                out,
                models,
                ["translate_from_files"],
                other_data,
                other,
                hparams=SMALL,
                missing="skip",
                records_dir=kept,
            ),
        )
        assert none.endswith(
            "\n\nNot finished, left out (--missing=skip): translate_from_files t3_base."
        )
        assert "Read from records" not in none


def _changed(data_dir: str, tmp_path) -> str:
    """A copy of data_dir with one byte of its dev shard changed."""
    changed = str(tmp_path / "data_changed")
    shutil.copytree(data_dir, changed)
    (dev,) = [name for name in os.listdir(changed) if "-dev-" in name]
    path = pathlib.Path(changed, dev)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    return changed


@pytest.mark.parametrize(
    ("models", "problems", "said"),
    [
        (["t3_base", "t3_heads3"], ["translate_from_files"], "unknown \\['t3_heads3'\\]"),
        (["table3"], ["translate_from_files", "translate_gettext"], "one text problem"),
        (["table7"], ["algorithmic_reverse_decimal20"], "one text problem"),
    ],
)
def test_bad_translation_requests_are_one_line(models, problems, said, tmp_path):
    with pytest.raises(ValueError, match=said):
        translation_compare.compare(
            runs.Request(str(tmp_path), models, problems, str(tmp_path), TrainConfig())
        )


def test_translation_rows_and_other_models_are_compared_separately(tmp_path):
    with pytest.raises(ValueError, match="separately"):
        comparison.compare(
            runs.Request(
                str(tmp_path),
                ["t3_base", "transformer"],
                ["translate_from_files"],
                str(tmp_path),
                TrainConfig(),
            ),
        )
    with pytest.raises(ValueError, match="translation_compare"):
        comparison.compare(
            runs.Request(
                str(tmp_path), ["t3_base"], ["translate_from_files"], str(tmp_path), TrainConfig()
            )
        )


def test_tables_expand_in_order_and_a_decode_only_row_brings_its_training_row():
    assert translation.parse_rows(["table7", "t7_ut"]) == list(translation.TABLE7)
    assert list(translation.training_entries(["t3_average5"])) == ["t3_base"]
    assert translation.training_entries(["t3_greedy", "t3_base"]).keys() == {"t3_base"}


def _count(model_name, hparams_set, overrides, vocab_size=8000) -> int:
    exp = experiment.Experiment.resolve(model_name, "translate_gettext", hparams_set, overrides)
    model = exp.build_model(vocab_size)
    checkpoints.build_model(model)
    return sum(v.shape.num_elements() for v in model.trainable_variables)


def test_the_table7_uts_have_the_base_transformers_parameter_count():
    """'Equal parameters' holds within 1% on the corpus's 8k vocabulary."""
    rows = translation.TABLE7
    base = _count("transformer", rows["t7_transformer"].hparams_set, rows["t7_transformer"].hparams)
    for key in ("t7_ut", "t7_ut_act"):
        row = rows[key]
        assert _count(row.model, row.hparams_set, row.hparams) == pytest.approx(base, rel=0.01)


def test_table7_prints_steps_and_the_adaptive_uts_ponder_time_per_token():
    """Figures by hand: the steps each row trained (a time budget's runs differ), and
    the ponder column when a row has ponder times, median [range] over seeds, "-" for
    rows without ACT."""
    base, act = translation.ROWS["t7_transformer"], translation.ROWS["t7_ut_act"]
    figures = translation.Figures
    table = [
        (
            base,
            [
                figures(1, "a", 12.0, 20.0, 1.95e6, 2878, 45.0),
                figures(2, "b", 11.0, 22.0, 1.95e6, 2900, 45.1),
            ],
        ),
        (
            act,
            [
                figures(1, "c", 13.0, 19.0, 1.93e6, 1400, 45.0, (3.0, 2.5)),
                figures(2, "d", 12.0, 21.0, 1.93e6, 1526, 45.3, (4.0, 2.0)),
                figures(3, "e", 14.0, 20.0, 1.93e6, 1450, 44.9, (3.5, 3.0)),
            ],
        ),
    ]
    lines = translation.markdown(table, "dev").splitlines()
    assert lines[0].endswith(
        "| steps | train min | dev PPL | dev BLEU | paper PPL | paper BLEU | dev ponder time (enc / dec) |"
    )
    assert lines[2].endswith("| - |")
    assert lines[3].endswith("| 3.50 [3.00, 4.00] / 2.50 [2.00, 3.00] |")
    assert (
        "| 2889 [2878, 2900] | 45.0 [45.0, 45.1] | 11.50 [11.00, 12.00] | 21.0 [20.0, 22.0] |"
        in lines[2]
    )
    assert "| 1.93M | 1450 [1400, 1526] | 45.0 [44.9, 45.3] | 13.00 [12.00, 14.00] |" in lines[3]
    # Table 3's rows have no ACT: no column.
    assert "ponder" not in translation.markdown(table[:1], "dev")


def test_each_variation_is_read_against_the_base_beside_the_papers_difference():
    """Figures by hand. The base: PPL 11.0 [10.9, 11.2], BLEU 24.4 [23.8, 25.4]
    (paper 4.92 / 25.8). d_k=16: PPL 11.6 [11.59, 11.63], +0.60 against the
    paper's +0.09, ranges apart; BLEU 23.2 [23.1, 23.9], -1.2 against the paper's
    -0.4, ranges overlapping at 23.8-23.9. Learned positions: the paper's PPL
    does not move (4.92), its BLEU -0.1; ours +0.2 BLEU, the other way. Greedy
    decodes the base's own runs: paired by seed, -1.0, -0.5 and +0.2 BLEU, so
    not every seed; a row with one seed says so."""
    rows = translation.ROWS
    figures = translation.Figures

    def runs(ppl, bleu):
        return [
            figures(k + 1, f"r{k}", p, b, 1.9e6, 3000, 50.0)
            for k, (p, b) in enumerate(zip(ppl, bleu, strict=True))
        ]

    base = runs([11.2, 10.9, 11.0], [23.8, 24.4, 25.4])
    greedy = [
        figures(f.seed, f.run_dir, None, f.bleu + d, 1.9e6, 3000, 50.0)
        for f, d in zip(base, (-1.0, -0.5, 0.2), strict=True)
    ]
    table = [
        (rows["t3_base"], base),
        (rows["t3_keys16"], runs([11.59, 11.63, 11.6], [23.1, 23.9, 23.2])),
        (rows["t3_learned"], runs([9.7, 9.8, 9.75], [24.6, 24.5, 24.7])),
        (rows["t3_greedy"], greedy),
        (rows["t3_layers1"], runs([13.1], [22.7])),
    ]
    text = translation.markdown(table, "dev")
    lines = text.split("\n\n")[1].splitlines()
    assert lines[0] == (
        "| variation | minus | dev PPL | paper PPL | dev BLEU | paper BLEU "
        "| the paper's direction (PPL / BLEU) | beyond the seeds' spread (PPL / BLEU) |"
    )
    base_label = rows["t3_base"].label
    assert lines[2] == (
        f"| d_k=16 | {base_label} | +0.60 | +0.09 | -1.2 | -0.4 | yes / yes | apart / overlap |"
    )
    assert lines[3] == (
        f"| learned positions | {base_label} | -1.25 | +0.00 | +0.2 | -0.1 "
        "| none in the paper / no | apart / overlap |"
    )
    assert lines[4] == (
        f"| greedy (base: beam 4, alpha 0.6) | {base_label} | - | - | -0.5 | - "
        "| - / - | - / not every seed |"
    )
    assert lines[5] == (
        f"| N=1 | {base_label} | +2.10 | +1.19 | -1.7 | -2.1 | yes / yes | one seed / one seed |"
    )
    # No reference row, no comparison.
    assert "\n\n" not in translation.markdown(table[1:], "dev")
