"""The two-phase command line of the GPU scripts: `SCRIPT PHASE DIR [--build
BUILD] [options]`, where a prepare phase runs here with the build (compiles,
ships weft-run) and a check or run phase runs on the GPU machine over DIR."""
import argparse
import os

# The checkout this package lives in (python/weft/gpu): its build/ is the
# default build directory.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
DEFAULT_BUILD = os.path.join(REPO, "build")


def phase_parser(description, phases):
    """The parser of `PHASE DIR --build BUILD`; a script adds its own options."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=list(phases))
    parser.add_argument("dir")
    parser.add_argument("--build", default=DEFAULT_BUILD,
                        help="the build directory prepare takes weft-compile and weft-run from")
    return parser


def run_phases(description, phases, add_options=None, argv=None):
    """Parses the command line and runs its phase: `phases` maps a phase name
    to a function of the parsed arguments that returns the exit status (None
    for 0); `add_options(parser)` adds the script's own options."""
    parser = phase_parser(description, phases)
    if add_options:
        add_options(parser)
    args = parser.parse_args(argv)
    return phases[args.phase](args) or 0
