#!/usr/bin/env python3
"""Packs a results folder's raw files into its one archive, logs.tar.xz.

bench/results/ holds records: each folder keeps its README.md files (they quote the commands and
summarise) readable in the tree, and everything else in one xz archive, so the records stay small
and few. Archives found inside (logs.tgz, rig-logs.tar.gz, x.log.gz) are unpacked first, so that
xz compresses the text itself (gzip'ed text does not compress again). Running it again on a folder
that already has logs.tar.xz adds the new files to the archive.

    tools/pack_results.py bench/results/<folder> [...]
    tar -C bench/results/<folder> -xJf bench/results/<folder>/logs.tar.xz   # to read the logs
"""
import gzip
import lzma
import os
import shutil
import sys
import tarfile

ARCHIVE = "logs.tar.xz"
KEPT = "README.md"


def unpack_nested(folder):
    """Replaces every x.tgz / x.tar.gz by a folder x/ and every x.gz by x, until none is left."""
    while True:
        found = False
        for root, _, files in os.walk(folder):
            for name in files:
                path = os.path.join(root, name)
                if name.endswith((".tgz", ".tar.gz")):
                    target = path[: -len(".tgz")] if name.endswith(".tgz") else path[: -len(".tar.gz")]
                    if os.path.exists(target):
                        target += ".unpacked"
                    os.makedirs(target)
                    with tarfile.open(path, "r:gz") as t:
                        t.extractall(target, filter="data")
                    os.remove(path)
                    found = True
                elif name.endswith(".gz"):
                    with gzip.open(path, "rb") as src, open(path[:-3], "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    os.remove(path)
                    found = True
        if not found:
            return


def packed_files(folder):
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if name != KEPT and os.path.relpath(path, folder) != ARCHIVE:
                yield path


def pack(folder):
    archive = os.path.join(folder, ARCHIVE)
    if os.path.exists(archive):
        with tarfile.open(archive, "r:xz") as t:
            t.extractall(folder, filter="data")
        os.remove(archive)
    unpack_nested(folder)
    paths = list(packed_files(folder))
    if not paths:
        return 0
    with tarfile.open(archive, "w:xz", preset=9 | lzma.PRESET_EXTREME) as t:
        for path in paths:
            t.add(path, arcname=os.path.relpath(path, folder), recursive=False)
    for path in paths:
        os.remove(path)
    for root, dirs, files in os.walk(folder, topdown=False):   # folders left empty
        if root != folder and not os.listdir(root):
            os.rmdir(root)
    return len(paths)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    for folder in argv[1:]:
        if not os.path.isdir(folder):
            print(f"pack_results: {folder} is not a folder; give a folder under bench/results/", file=sys.stderr)
            return 2
        print(f"{folder}: {pack(folder)} files into {ARCHIVE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
