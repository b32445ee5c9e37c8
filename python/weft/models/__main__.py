"""python -m weft.models --preset NAME [--dtype f64] [--layers 2 ...] --out-dir DIR
(or --emit-only to print the IR)."""
import argparse
import dataclasses
import sys

from weft.models.config import PRESETS, ModelConfig
from weft.models.emitter import emit_module
from weft.models.generate import write_model


def parse_bool(text):
    if text.lower() in ("1", "true", "on", "yes"):
        return True
    if text.lower() in ("0", "false", "off", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected on/off, got {text!r}")


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m weft.models", description=__doc__)
    parser.add_argument("--preset", choices=sorted(PRESETS), required=True)
    parser.add_argument("--out-dir", help="write model.mlir, inputs.npz, expected*.npz here")
    parser.add_argument("--emit-only", action="store_true", help="print the IR to stdout")
    for field in dataclasses.fields(ModelConfig):
        flag = "--" + field.name.replace("_", "-")
        kind = parse_bool if field.type in (bool, "bool") else {
            "int": int, "float": float, "str": str}.get(field.type, field.type)
        parser.add_argument(flag, dest=field.name, type=kind, default=None,
                            help=f"override {field.name} (preset default)")
    return parser


def config_from_args(args):
    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(ModelConfig)
                 if getattr(args, f.name) is not None}
    return PRESETS[args.preset].replace(**overrides)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except ValueError as error:
        parser.error(str(error))
    if args.emit_only:
        overridden = config != PRESETS[args.preset]
        sys.stdout.write(emit_module(config, None if overridden else args.preset))
        return 0
    if not args.out_dir:
        parser.error("--out-dir is required unless --emit-only")
    for name, path in write_model(config, args.out_dir).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
