# lysep: reproduce the LySep paper (Liu & Gu).  See README.md.
#
#   make install          .venv with the package (editable) and the test tools
#   make test             the test suite
#   make reproduce        full sweep (4 experiments x 4 sizes x 10 seeds x PINN, LySep, 2000 iterations;
#                         and rfls, rfm and poly, one least-squares solve each, seconds; poly one seed)
#                         into the committed archive results/paper/ (runs already there are skipped),
#                         then tables (LaTeX + Markdown), the comparison with the paper and the figures
#                         (per experiment, and accuracy against cost of all four: RESULTS/figures/);
#                         RESULTS=DIR reruns everything into DIR instead
#   make extras           the other baselines (pinn-adam, pinn-lbfgs, pinn-lm) at EXTRA_SEEDS (0-2) in every
#                         cell of the four experiments into RESULTS, then the outputs (docs/baselines.md)
#   make depth            the depth study (docs/lysep-depth.md): elliptic-2d-depth, elliptic-10d-depth with
#                         PINN, LySep, rfls, L-BFGS at L = 2..5 into RESULTS, then its tables and figures
#                         (depth-outputs)
#   make fixed-tau        LySep as written (one fixed tau, the paper's Algorithms 1-3) beside our default rule:
#                         `lysep study step-size` at the two smallest sizes of each experiment, 3 seeds, 2000
#                         sweeps, tau in FIXED_TAUS (a reduced grid at the second 5-D and 10-D sizes), into
#                         RESULTS/<experiment>/study-step-size/ (resumes; about 7 CPU-hours; two chains)
#   make poly-degree      poly's degree study (`lysep study poly-degree`, seconds) into
#                         RESULTS/<experiment>/study-poly-degree/ (README's "how hard is each table")
#   make docs             regenerate the generated parts of README.md, docs/results.md, docs/lysep-depth.md, docs/harder.md (blocks between
#                         `<!-- BEGIN lysep ... -->` markers) from the archive RESULTS (default results/paper; a block naming
#                         its own --results, docs/harder.md's, reads those)
#   make regenerate       the archive remade with today's kernels into REGEN (default results/regen/, made with
#                         the experiments file REGEN/experiments.yaml): the paper sweep, rfls, rfm, the extras
#                         and the depth study (resumes; ~24.7 CPU-hours, what the archive's records took:
#                         `lysep status --timing`), then `lysep verify --against` the old archive's finals
#                         (OLD_FINALS, results/paper-finals-2026-11.csv) cell by cell
#   make adopt-regen      once REGEN is complete and agrees: its records replace those of RESULTS (per
#                         experiment and solver; the step-size study stays); then make outputs docs;
#                         ACCEPT=EXP:SOLVER:LxM,... names cells known to differ (docs/archive.md)
#   make compact          rewrite older (schema-2) records of RESULTS with their histories in the NPZ
#                         (same numbers, ~60 % fewer bytes; records already compact are untouched)
#   make studies          the studies behind docs/results.md and the README (studies/run.py): the cheap ones
#                         (seconds each, from the archive) into studies/results/; STUDIES="a b" runs those
#                         in full instead (long ones say their cost first; those with a CSV resume)
#   make reproduce-quick  the same end to end on a reduced sweep (smallest size, 2 seeds, 200 iterations),
#                         under results/quick/  (also: make reproduce REPRODUCE=quick)
#
# Variables: JOBS (worker processes, default 2; also `make test`'s pytest-xdist workers), RESULTS (output directory), ITERATIONS (default: the spec's;
# 200 for quick), VENV, PYTHON; SCHEDULER (a dask scheduler tcp://HOST:PORT, local or local:N) or
# SCHEDULER_FILE (a dask scheduler file) runs the sweep on a dask cluster instead of JOBS local processes
# (docs/cluster.md).
# An interrupted `make reproduce` resumes: finished runs are skipped.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LYSEP := $(BIN)/lysep
JOBS ?= 2
SCHEDULER ?=
SCHEDULER_FILE ?=
CLUSTER_FLAGS := $(if $(SCHEDULER),--scheduler $(SCHEDULER)) $(if $(SCHEDULER_FILE),--scheduler-file $(SCHEDULER_FILE))
# CONFIG: another experiments file for every lysep command (default: ./experiments.yaml)
CONFIG ?=
CONFIG_FLAGS := $(if $(CONFIG),--config "$(CONFIG)")
REPRODUCE ?= full
EXPERIMENTS := elliptic-2d elliptic-10d parabolic-5d hyperbolic-5d

ifeq ($(REPRODUCE),quick)
RESULTS ?= results/quick
ITERATIONS ?= 200
RUN_FLAGS ?= --sizes smallest --seeds 0-1
else
RESULTS ?= results/paper
ITERATIONS ?=
RUN_FLAGS ?=
endif
# Reports show only the runs made with this iteration count (the spec's when empty).
SHOW_FLAGS := $(if $(ITERATIONS),--iterations $(ITERATIONS),)

.PHONY: studies regenerate adopt-regen install test reproduce reproduce-quick runs outputs extras depth depth-outputs docs compact fixed-tau poly-degree

# LySep's fixed-tau study (docs/lysep.md): experiment:sizes, in two chains run side by side
# (experiment:size[:grid]; the second sizes of 5-D and 10-D run a reduced grid: at (3,20) every tau <= 1e-8
# equals tau = 0 there, and 10-D needs the large steps instead)
FIXED_TAUS ?= 0,1e-14,1e-12,1e-10,1e-8,1e-6,1e-4,1e-2,1,1e2
FIXED_TAUS_REDUCED ?= 0,1e-10,1e-8,1e-6,1e-4,1e-2,1,1e2
FIXED_TAUS_10D ?= 0,1e-6,1e-4,1e-2,1,1e2,1e3,1e4
FIXED_TAU_SEEDS ?= 0-2
FIXED_TAU_CHAIN_1 ?= elliptic-2d:3x30 elliptic-2d:3x50 hyperbolic-5d:3x20 hyperbolic-5d:3x50:reduced
FIXED_TAU_CHAIN_2 ?= elliptic-10d:3x20 parabolic-5d:3x20 parabolic-5d:3x50:reduced elliptic-10d:3x50:10d
FIXED_TAU_STUDY = for c in $(1); do \
	  e=$${c%%:*}; r=$${c\#*:}; s=$${r%%:*}; g=$${r\#$$s}; taus=$(FIXED_TAUS); \
	  if [ "$$g" = ":reduced" ]; then taus=$(FIXED_TAUS_REDUCED); fi; \
	  if [ "$$g" = ":10d" ]; then taus=$(FIXED_TAUS_10D); fi; \
	  "$(LYSEP)" study step-size $$e --sizes $$s --seeds $(FIXED_TAU_SEEDS) --taus $$taus \
	    --iterations 2000 --results "$(RESULTS)" $(CONFIG_FLAGS) || exit $$?; \
	done

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv "$(VENV)"
	"$(BIN)/python" -m pip install --quiet -e '.[test,dask]'
	touch $@

test: install
	"$(BIN)/python" -m pytest -q -n $(JOBS)

reproduce: install
	$(MAKE) --no-print-directory runs outputs

compact: install
	"$(BIN)/python" -m lysep_cli.store.compact "$(RESULTS)"

reproduce-quick:
	$(MAKE) --no-print-directory reproduce REPRODUCE=quick

runs:
	@for e in $(EXPERIMENTS); do \
	  echo "== lysep run $$e --solver paper,rfls,rfm,poly --jobs $(JOBS) $(strip $(CLUSTER_FLAGS)) $(RUN_FLAGS)"; \
	  "$(LYSEP)" run $$e --solver paper,rfls,rfm,poly --jobs $(JOBS) $(CLUSTER_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) $(SHOW_FLAGS) $(RUN_FLAGS) $(NUMERICS_FLAGS) || exit $$?; \
	done

EXTRA_SOLVERS ?= pinn-adam,pinn-lbfgs,pinn-lm
EXTRA_SEEDS ?= 0-2
EXTRA_EXPERIMENTS ?= $(EXPERIMENTS)

extras: install
	@for e in $(EXTRA_EXPERIMENTS); do \
	  echo "== lysep run $$e --solver $(EXTRA_SOLVERS) --seeds $(EXTRA_SEEDS) --jobs $(JOBS) $(strip $(CLUSTER_FLAGS))"; \
	  "$(LYSEP)" run $$e --solver $(EXTRA_SOLVERS) --seeds $(EXTRA_SEEDS) --jobs $(JOBS) $(CLUSTER_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) $(SHOW_FLAGS) $(NUMERICS_FLAGS) || exit $$?; \
	done
	$(MAKE) --no-print-directory outputs

outputs:
	@mkdir -p "$(RESULTS)"/tables
	@for e in $(EXPERIMENTS); do \
	  "$(LYSEP)" table $$e --format latex $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --out "$(RESULTS)"/tables/$$e.tex || exit $$?; \
	  "$(LYSEP)" table $$e --format markdown $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --out "$(RESULTS)"/tables/$$e.md || exit $$?; \
	done
	"$(LYSEP)" table $(EXPERIMENTS) --format latex --standalone $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --out "$(RESULTS)"/tables/tables.tex
	"$(LYSEP)" table $(EXPERIMENTS) --format markdown $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --out "$(RESULTS)"/tables/tables.md
	"$(LYSEP)" compare $(EXPERIMENTS) --format markdown $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --out "$(RESULTS)"/comparison.md
	"$(LYSEP)" compare $(EXPERIMENTS) --format latex $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --out "$(RESULTS)"/comparison.tex
	"$(LYSEP)" status $(EXPERIMENTS) $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --out "$(RESULTS)"/status.md
	"$(LYSEP)" plot $(EXPERIMENTS) --combined $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS)
	@echo "outputs under $(RESULTS)/: tables/, comparison.md, comparison.tex, status.md, <experiment>/figures/, figures/accuracy-cost.{png,pdf}"
	@"$(LYSEP)" status $(EXPERIMENTS) $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --summary

DEPTH_EXPERIMENTS := elliptic-2d-depth elliptic-10d-depth
DEPTH_SOLVERS ?= lysep,pinn,rfls,pinn-lbfgs

depth: install
	@for e in $(DEPTH_EXPERIMENTS); do \
	  echo "== lysep run $$e --solver $(DEPTH_SOLVERS) --jobs $(JOBS) $(strip $(CLUSTER_FLAGS)) $(RUN_FLAGS)"; \
	  "$(LYSEP)" run $$e --solver $(DEPTH_SOLVERS) --jobs $(JOBS) $(CLUSTER_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) $(SHOW_FLAGS) $(RUN_FLAGS) $(NUMERICS_FLAGS) || exit $$?; \
	done
	$(MAKE) --no-print-directory depth-outputs

depth-outputs:
	@mkdir -p "$(RESULTS)"/tables
	@for e in $(DEPTH_EXPERIMENTS); do \
	  if ls "$(RESULTS)"/$$e/*/L*-M*/seed-*.json >/dev/null 2>&1; then \
	    "$(LYSEP)" table $$e --format markdown $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --out "$(RESULTS)"/tables/$$e.md || exit $$?; \
	    "$(LYSEP)" study depth $$e $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) --out "$(RESULTS)"/tables/$$e-study.md || exit $$?; \
	    "$(LYSEP)" plot $$e $(SHOW_FLAGS) --results "$(RESULTS)" $(CONFIG_FLAGS) || exit $$?; \
	  else echo "$$e: no runs under $(RESULTS)/ yet"; fi; \
	done

fixed-tau: install
	@($(call FIXED_TAU_STUDY,$(FIXED_TAU_CHAIN_1))) & pid=$$!; \
	($(call FIXED_TAU_STUDY,$(FIXED_TAU_CHAIN_2))) || status=$$?; \
	wait $$pid || status=$$?; exit $${status:-0}

# every study of studies/ (studies/run.py holds each one's commands, files, cost and claim)
STUDIES_CHEAP := archive_facts pinn_plateau_phi fit_size b3_spread frozen_bias cellstats_power rfm_equal_accuracy
STUDIES_LONG := rfm_study lstsq_basic pinn_ablations pinn_torch_curve pinn_curvature tune_pinn stay_5000 \
	ridge_escape escape_study escape_sweeps depth_stall js_breakdown lysep_variants baselines platform_spread_summary \
	fixed_tau_collapse verify_power weights_spread verify_plants
STUDIES ?=

studies: install
	@echo "studies: $(if $(STUDIES),$(STUDIES),cheap: $(STUDIES_CHEAP); and the summaries of the long ones)"
	@echo "long (make studies STUDIES=NAME; python studies/run.py --list for their cost): $(STUDIES_LONG)"
	"$(BIN)/python" studies/run.py $(STUDIES)

poly-degree: install
	@for e in $(EXPERIMENTS); do \
	  "$(LYSEP)" study poly-degree $$e --results "$(RESULTS)" $(CONFIG_FLAGS) || exit $$?; \
	done

docs: install
	"$(BIN)/python" docs/refresh.py --results "$(RESULTS)"

REGEN ?= results/regen
# the extras are 3 seeds a cell by design, too few for verify's tests: reported, not failed (ALLOW_PARTIAL=)
ALLOW_PARTIAL ?= 1
PARTIAL_FLAGS := $(if $(ALLOW_PARTIAL),--allow-partial)
OLD_FINALS ?= results/paper-finals-2026-11.csv

REGEN_FLAGS = --results "$(REGEN)" --config "$(REGEN)/experiments.yaml"
# SAME_NUMERICS=1: every lysep run refuses to add to an archive made by other numerics (make regenerate)
NUMERICS_FLAGS = $(if $(SAME_NUMERICS),--same-numerics)

# what the old archive holds beyond the paper sweep: the extras in three experiments and four 10-D runs
regenerate: install
	$(MAKE) --no-print-directory runs RESULTS="$(REGEN)" CONFIG="$(REGEN)/experiments.yaml" SAME_NUMERICS=1
	$(MAKE) --no-print-directory extras RESULTS="$(REGEN)" CONFIG="$(REGEN)/experiments.yaml" SAME_NUMERICS=1 \
	  EXTRA_EXPERIMENTS="elliptic-2d parabolic-5d hyperbolic-5d"
	"$(LYSEP)" run elliptic-10d --solver pinn-adam --sizes 3x20 --seeds 0 --same-numerics $(REGEN_FLAGS)
	"$(LYSEP)" run elliptic-10d --solver pinn-lbfgs --sizes 3x50 --seeds 0-2 --same-numerics $(REGEN_FLAGS)
	$(MAKE) --no-print-directory depth RESULTS="$(REGEN)" CONFIG="$(REGEN)/experiments.yaml" SAME_NUMERICS=1
	"$(LYSEP)" verify --against "$(OLD_FINALS)" $(REGEN_FLAGS) $(if $(ACCEPT),--accept $(ACCEPT)) $(PARTIAL_FLAGS)

# the regenerated archive replaces the records of RESULTS (default results/paper) once it is complete and
# agrees with the old finals: each <experiment>/<solver>/ of REGEN moves over the old one; the step-size
# study, the finals file and everything REGEN does not hold stay; then `make outputs docs` (docs/archive.md)
adopt-regen: install
	"$(LYSEP)" status elliptic-2d elliptic-10d parabolic-5d hyperbolic-5d --solver pinn,lysep,rfls,rfm --check --summary $(REGEN_FLAGS)
	"$(LYSEP)" status elliptic-2d parabolic-5d hyperbolic-5d --solver pinn-adam,pinn-lbfgs,pinn-lm --seeds 0-2 \
	  --check --summary $(REGEN_FLAGS)
	"$(LYSEP)" status elliptic-2d-depth elliptic-10d-depth --check --summary $(REGEN_FLAGS)
	"$(LYSEP)" status --one-numerics --summary $(REGEN_FLAGS)
	@for f in "$(RESULTS)"/*/*/*/seed-*.json; do r=$${f#"$(RESULTS)"/}; test -f "$(REGEN)/$$r" || \
	  { echo "adopt-regen: $(REGEN)/ lacks $$r, which $(RESULTS)/ holds"; exit 1; }; done
	"$(LYSEP)" verify --sample 2 --cheapest $(REGEN_FLAGS)
	"$(LYSEP)" verify --sample 1 --cheapest --solver lysep $(REGEN_FLAGS)
	"$(LYSEP)" verify --against "$(OLD_FINALS)" $(REGEN_FLAGS) $(if $(ACCEPT),--accept $(ACCEPT)) $(PARTIAL_FLAGS)
	for f in "$(REGEN)"/*/data.npz; do cmp "$$f" "$(RESULTS)/$$(basename "$$(dirname "$$f")")/data.npz" || exit $$?; done
	for d in "$(REGEN)"/*/*/; do \
	  e=$$(basename "$$(dirname "$$d")"); s=$$(basename "$$d"); \
	  rm -rf "$(RESULTS)/$$e/$$s" && mkdir -p "$(RESULTS)/$$e" && mv "$$d" "$(RESULTS)/$$e/$$s" || exit $$?; \
	done
	"$(LYSEP)" status --one-numerics --summary --results "$(RESULTS)"
