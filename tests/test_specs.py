"""experiments.yaml validation and the CLI selectors (--sizes, --seeds, --solver)."""

from __future__ import annotations

import pytest

from lysep_cli.specs import (BadInput, default_config, load_specs, parse_seeds, parse_sizes, parse_solvers, select_experiments)

from foundation_helpers import TINY_YAML, write_tiny


def test_project_specs_load():
    specs = load_specs(default_config())
    assert list(specs)[:4] == ["elliptic-2d", "elliptic-10d", "parabolic-5d", "hyperbolic-5d"]
    assert list(specs)[4:] == ["elliptic-2d-depth", "elliptic-10d-depth"]  # depth study, not in make reproduce
    e2 = specs["elliptic-2d"]
    assert e2.sizes == ((3, 30), (3, 50), (3, 80), (3, 100)) and e2.n_test == 350
    for s in specs.values():
        assert s.iterations == 2000 and s.seeds == tuple(range(10))
        assert {"pinn", "lysep"} <= set(s.solvers)
        assert {"lr", "lr_final"} <= set(s.solvers["pinn"].to_dict())


BAD = [
    # (replace this, with that, field named in the message)
    ("    d: 2\n", "    d: two\n", "'d'"),
    ("    d: 2\n", "    d: true\n", "'d'"),
    ("    sizes: [[3, 6], [2, 5]]", "    sizes: [[3, 6], [1, 5]]", "sizes[1].L"),
    ("    sizes: [[3, 6], [2, 5]]", "    sizes: [[3, 0], [2, 5]]", "sizes[0].M"),
    ("    sizes: [[3, 6], [2, 5]]", "    sizes: [[3, 6, 1]]", "sizes[0]"),
    ("    n_train: 60", "    n_train: 0", "n_train"),
    ("    n_test: 40", "    n_test: -3", "n_test"),
    ("    iterations: 5\n    seeds: [0, 1]\n    solvers:\n      pinn: {lr: 1.0e-3, lr_final",
     "    iterations: 0\n    seeds: [0, 1]\n    solvers:\n      pinn: {lr: 1.0e-3, lr_final", "iterations"),
    ("    pde: elliptic", "    pde: laplace", "pde"),
    ("    table: 1\n", "    table: 1\n    colour: red\n", "colour"),
    ("      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}", "      magic: {}", "solvers.magic"),
    ("      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}", "      pinn: 3", "solvers.pinn"),
    ("    seeds: [0, 1]\n    solvers:\n      pinn: {lr: 1.0e-3, lr_final",
     "    seeds: [0, 0]\n    solvers:\n      pinn: {lr: 1.0e-3, lr_final", "seeds"),
    ("    d: 2\n", "    d: 3\n", "'solution'"),  # 3-D exp-sin (a key given twice: test_a_key_given_twice_is_an_error)
    ("    d: 2\n", "    d: 40\n", "'d'"),  # rejection sampling would never finish
]


@pytest.mark.parametrize("name", ["../outside", "a/b", ".hidden", "", "x y"])
def test_experiment_names_are_safe_directory_names(tmp_path, name):
    path = write_tiny(tmp_path, TINY_YAML.replace("  parabolic-5d:", f"  {name!r}:", 1))
    with pytest.raises(BadInput, match="experiment name"):
        load_specs(path)

# Solver settings: (replace the pinn block of elliptic-2d with this, field named in the message)
BAD_SETTINGS = [
    ("{lr: 1.0e-3, lr_fnal: 1.0e-4}", "lr_fnal", "did you mean 'lr_final'"),
    ("{lr: abc}", "lr", "expected a number"),
    ("{lr_final: 1.0e-4}", "lr", "missing required setting"),
    ("{lr: -1.0}", "lr", "must be > 0"),
    ("{lr: .nan}", "lr", "finite"),
    ("{lr: true}", "lr", "got bool"),
    ("{lr: [1]}", "lr", "got list"),
    ("[1, 2]", "solvers.pinn", "mapping"),
]


@pytest.mark.parametrize("old,new,field", BAD)
def test_spec_errors_name_file_experiment_field(tmp_path, old, new, field):
    assert old in TINY_YAML
    path = write_tiny(tmp_path, TINY_YAML.replace(old, new, 1))
    with pytest.raises(BadInput) as info:
        load_specs(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert str(path) in msg and "elliptic-2d" in msg and field in msg


@pytest.mark.parametrize("block,field,why", BAD_SETTINGS)
def test_settings_errors_name_file_experiment_solver_field(tmp_path, block, field, why):
    path = write_tiny(tmp_path, TINY_YAML.replace("{lr: 1.0e-3, lr_final: 1.0e-4}", block, 1))
    with pytest.raises(BadInput) as info:
        load_specs(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg and "experiment 'elliptic-2d'" in msg
    assert "solver 'pinn'" in msg and f"field '{field}'" in msg and why in msg


@pytest.mark.parametrize("solver,block,field", [
    ("lysep", "{step_rule: bogus}", "step_rule"), ("lysep", "{tau: -1.0}", "tau"),
    ("lysep", "{max_tries: 2.5}", "max_tries"), ("lysep", "{shrink: 1.0}", "shrink"),
    ("rfls", "{rcond: never}", "rcond"), ("pinn-adam", "{beta1: 1.0}", "beta1"),
    ("pinn-lbfgs", "{maxcor: 0}", "maxcor"), ("pinn-lm", "{max_iterations: x}", "max_iterations"),
])
def test_every_solver_validates_its_settings_at_load(tmp_path, solver, block, field):
    text = TINY_YAML.replace("      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n",
                             f"      pinn: {{lr: 1.0e-3, lr_final: 1.0e-4}}\n      {solver}: {block}\n", 1)
    with pytest.raises(BadInput, match=f"solver '{solver}', field '{field}'"):
        load_specs(write_tiny(tmp_path, text))


def test_settings_are_typed_with_defaults(tmp_path):
    text = TINY_YAML.replace("      pinn: {lr: 1.0e-3, lr_final: 1.0e-4}\n",
                             "      pinn: {lr: 1e-3}\n      lysep: {tau: 1}\n      rfls:\n", 1)
    spec = load_specs(write_tiny(tmp_path, text.replace("[[3, 6], [2, 5]]", "[[3, 6]]")))["elliptic-2d"]
    assert spec.solvers["pinn"].lr == 1e-3 and spec.solvers["pinn"].lr_final is None  # "1e-3": a YAML string
    assert spec.solvers["lysep"].tau == 1.0 and isinstance(spec.solvers["lysep"].tau, float)
    assert spec.solvers["lysep"].step_rule == "backtracking" and spec.solvers["rfls"].rcond == "auto"
    # LySep trains any depth L >= 2 (docs/lysep-depth.md): an L = 2 size loads.
    assert load_specs(write_tiny(tmp_path, text))["elliptic-2d"].sizes == ((3, 6), (2, 5))


def test_missing_key_and_broken_yaml(tmp_path):
    path = write_tiny(tmp_path, TINY_YAML.replace("    n_test: 40\n", "", 1))
    with pytest.raises(BadInput, match="n_test.*missing"):
        load_specs(path)
    path = write_tiny(tmp_path, TINY_YAML.replace("sizes: [[3, 6], [2, 5]]", "sizes: [[3, 6], [2, 5]", 1))
    with pytest.raises(BadInput, match="invalid YAML at line") as info:
        load_specs(path)
    assert "\n" not in str(info.value)
    path = write_tiny(tmp_path, "experiments: {}\nother: 1\n")
    with pytest.raises(BadInput, match="other"):
        load_specs(path)
    with pytest.raises(BadInput, match="cannot read"):
        load_specs(tmp_path / "nope.yaml")


@pytest.mark.parametrize("old, new, key", [
    ("    n_test: 40\n", "    n_test: 40\n    n_test: 400\n", "n_test"),
    ("pinn: {lr: 1.0e-3,", "pinn: {lr: 1.0e-3, lr: 5.0e-3,", "lr"),
])
def test_a_key_given_twice_is_an_error(tmp_path, old, new, key):
    """Plain YAML keeps the last of two equal keys: a run would silently use the other value."""
    path = write_tiny(tmp_path, TINY_YAML.replace(old, new, 1))
    with pytest.raises(BadInput, match=f"invalid YAML at line .*: duplicate key '{key}'"):
        load_specs(path)


def test_a_merged_key_may_be_overridden(tmp_path):
    text = TINY_YAML.replace("  elliptic-2d:\n", "  elliptic-2d: &e2\n", 1)
    text += "  elliptic-2d-copy:\n    <<: *e2\n    n_test: 30\n"
    specs = load_specs(write_tiny(tmp_path, text))
    assert specs["elliptic-2d-copy"].n_test == 30 and specs["elliptic-2d"].n_test == 40
    assert specs["elliptic-2d-copy"].sizes == specs["elliptic-2d"].sizes


def test_select_experiments(tmp_path):
    specs = load_specs(write_tiny(tmp_path))
    assert [s.name for s in select_experiments(specs, None)] == ["elliptic-2d", "parabolic-5d"]
    with pytest.raises(BadInput, match="unknown experiment 'nope'"):
        select_experiments(specs, ["nope"])


def test_selectors(tmp_path):
    spec = load_specs(write_tiny(tmp_path))["elliptic-2d"]
    assert parse_sizes(None, spec) == [(3, 6), (2, 5)]
    assert parse_sizes("3x50, 4X7,3x50", spec) == [(3, 50), (4, 7)]
    assert parse_sizes("smallest", spec) == [(3, 6)]
    for bad in ("3x0", "1x5", "3", "3x5x2", "ax5", "٣x٥٠", "３x５０"):  # digits are 0-9 alone
        with pytest.raises(BadInput, match="--sizes"):
            parse_sizes(bad, spec)
    assert parse_seeds(None, spec) == [0, 1]
    assert parse_seeds("0-9", spec) == list(range(10))
    assert parse_seeds("0,3,5", spec) == [0, 3, 5]
    assert parse_seeds("0-2,7", spec) == [0, 1, 2, 7]
    for twice in ("0-2,7,1", "0,0", "3-5,4-6"):  # refused as the experiments file refuses them (issue 56)
        with pytest.raises(BadInput, match="--seeds: seed [0-9]+ given twice"):
            parse_seeds(twice, spec)
    for bad in ("5-2", "-1", "a", "1-", "0,,1", "", " ", "0-100000000", "٣", "０-９"):
        with pytest.raises(BadInput, match="--seeds"):
            parse_seeds(bad, spec)
    assert parse_seeds("0-99999", spec) == list(range(100000))  # linear, not quadratic
    for bad in ("", "  "):
        with pytest.raises(BadInput, match="--sizes: empty"):
            parse_sizes(bad, spec)
        with pytest.raises(BadInput, match="--solver: empty"):
            parse_solvers(bad, spec)
    assert parse_solvers("pinn", spec) == ["pinn"]
    assert parse_solvers(None, spec) == ["pinn"]
    assert parse_solvers("all", spec) == ["pinn"]
    with pytest.raises(BadInput, match="no settings"):
        parse_solvers("paper", spec)  # lysep is not configured in the tiny spec
    with pytest.raises(BadInput, match="unknown solver"):
        parse_solvers("magic", spec)
