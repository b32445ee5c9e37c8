"""Shipping weft-run to a GPU machine and running it there: the prepare phase
packs weft-run and the shared libraries GPU machines lack next to the
packages; the check phase unpacks them, runs packages and records verdicts."""
import json
import lzma
import os
import re
import shutil
import subprocess
import sys

# weft-run links the build machine's shared libLLVM and, through it, libz3,
# and libzip (the .npz container), which GPU machines lack.
SHIPPED_LIBRARIES = re.compile(r"\s*((?:libLLVM|libz3|libzip)[^ ]*) => (\S+)")


def ship_weft_run(directory, build):
    """Copies build/bin/weft-run and the shared libraries it needs into
    `directory`, xz-compressed (about 40 MB in all; unpack_weft_run restores
    them on the GPU machine), and prints the directory's files and sizes."""
    weft_run = os.path.join(build, "bin", "weft-run")
    shipped = [("weft-run", weft_run)]
    for line in subprocess.run(["ldd", weft_run], capture_output=True, text=True).stdout.splitlines():
        match = SHIPPED_LIBRARIES.match(line)
        if match:
            shipped.append((os.path.join("lib", match.group(1)), match.group(2)))
    for name, source in shipped:
        with open(source, "rb") as f, lzma.open(
                os.path.join(directory, name.replace("/", "__") + ".xz"), "wb", preset=6) as out:
            shutil.copyfileobj(f, out)
    sizes = {f: os.path.getsize(os.path.join(directory, f)) for f in sorted(os.listdir(directory))}
    print("prepared", directory, json.dumps(sizes))


def unpack_weft_run(directory):
    """Unpacks what ship_weft_run packed (weft-run, lib/ with libLLVM, libz3
    and libzip) once; returns the environment that runs it (LD_LIBRARY_PATH)."""
    libs = os.path.join(directory, "lib")
    os.makedirs(libs, exist_ok=True)
    for name in os.listdir(directory):
        if name.endswith(".xz"):
            target = os.path.join(directory, name[:-3].replace("__", "/"))
            if not os.path.exists(target):
                with lzma.open(os.path.join(directory, name)) as f, open(target, "wb") as out:
                    shutil.copyfileobj(f, out)
                os.chmod(target, 0o755)
    return dict(os.environ,
                LD_LIBRARY_PATH=libs + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))


def run_weft_run(directory, env, package, *args, echo=False):
    """weft-run DIR/package ARGS with the unpacked weft-run; its stdout.
    Raises RuntimeError naming the command and its exit status on a failure
    (with the end of stderr unless `echo` already wrote it out)."""
    command = [os.path.join(directory, "weft-run"), os.path.join(directory, package)] + list(args)
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if echo:
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
    if done.returncode != 0:
        tail = "" if echo else f": {done.stderr[-800:]}"
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}{tail}")
    return done.stdout


def step_losses(stdout):
    """The loss of each `step I/N loss L` line weft-run printed."""
    return [float(m.group(1)) for m in re.finditer(r"^step \d+/\d+ loss (\S+)", stdout, re.M)]


def memory_json(stdout):
    """weft-run --print-memory's `memory-json:` record, or None."""
    memory = re.search(r"^memory-json: (.*)$", stdout, re.M)
    return json.loads(memory.group(1)) if memory else None


class Checker:
    """The check phase over a prepared directory: weft-run unpacked, one
    PASS/FAIL line per check, the failures and results kept for
    results.json."""

    def __init__(self, directory):
        self.dir = directory
        self.failures = []
        self.results = {}
        self.env = unpack_weft_run(directory)

    def check(self, name, ok, detail):
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        self.results[name] = {"ok": bool(ok), "detail": detail}
        if not ok:
            self.failures.append(name)

    def run(self, package, *args):
        """(losses, --print-memory record or None) of weft-run on `package`."""
        stdout = run_weft_run(self.dir, self.env, package, *args, echo=True)
        return step_losses(stdout), memory_json(stdout)

    def finish(self):
        """Writes DIR/results.json and the verdict line; the exit status."""
        with open(os.path.join(self.dir, "results.json"), "w") as f:
            json.dump(self.results, f, indent=1)
        print("FAILED: " + ", ".join(self.failures) if self.failures else "ALL PASSED")
        return 1 if self.failures else 0
