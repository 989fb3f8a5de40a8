"""The corpus fetcher's reading of the lock and of npm's answers (no registry is asked here)."""

from pathlib import Path

from engine.training import fetch

# What `npm pack --json` printed (npm 11), trimmed to the fields read.
PACKED_TWO = """[
  {"id": "mobx@7.1.3", "name": "mobx", "version": "7.1.3", "filename": "mobx-7.1.3.tgz", "files": []},
  {"id": "@types/node@26.6.11", "name": "@types/node", "version": "26.6.11",
   "filename": "types-node-26.6.11.tgz", "files": []}
]"""
BAD_TAG = """{
  "error": {
    "code": "EINVALIDTAGNAME",
    "summary": "Invalid tag name \\"?\\" of package \\"@types/node@?\\": Tags may not have any characters",
    "detail": ""
  }
}"""
NOT_FOUND = """{
  "error": {
    "code": "E404",
    "summary": "Not Found - GET https://registry.npmjs.org/no-such-pkg-zzzqqq-1",
    "detail": "The requested resource 'no-such-pkg-zzzqqq-1@*' could not be found."
  }
}"""


def test_lock_leaves_unknown_versions_unpinned(tmp_path):
    lock = tmp_path / "lock.tsv"
    lock.write_text("ecosystem\tname\tversion\tlicence as stated\n"
                    "npm\tmobx\t7.1.3\tMIT\n"
                    "npm\t@types/node\t?\t\n"
                    "pypi\tclick\t\tBSD-3-Clause\n"
                    "debian\tgolang-1.19-src\t1.19.8-2\t(debian/copyright)\n")
    assert fetch.read_lock(lock) == {("npm", "mobx"): "7.1.3", ("debian", "golang-1.19-src"): "1.19.8-2"}
    assert fetch.read_lock(tmp_path / "missing.tsv") == {}


def test_shipped_lock_pins_every_package_it_lists():
    rows = fetch.LOCK.read_text().splitlines()[1:]
    assert len(fetch.read_lock()) == len(rows) > 500          # none left unpinned ("?" or empty)


def test_packed_tarballs_one_per_spec():
    got = fetch.packed_tarballs(["mobx@7.1.3", "@types/node"], PACKED_TWO, Path("/t"))
    assert got == {"mobx@7.1.3": Path("/t/mobx-7.1.3.tgz"), "@types/node": Path("/t/types-node-26.6.11.tgz")}


def test_packed_tarballs_npm_error_object_takes_nothing():
    # npm answers one spec it refuses with an object, not a list: nothing is taken and the caller
    # goes one by one (this crashed the fetch with a TypeError before)
    assert fetch.packed_tarballs(["@types/node@?"], BAD_TAG, Path("/t")) == {}
    assert fetch.packed_tarballs(["mobx@7.1.3", "@types/node@?"], BAD_TAG, Path("/t")) == {}
    assert fetch.packed_tarballs(["x"], NOT_FOUND, Path("/t")) == {}
    assert fetch.packed_tarballs(["x"], "", Path("/t")) == {}
    assert fetch.packed_tarballs(["x"], "npm WARN something\n", Path("/t")) == {}
    assert fetch.packed_tarballs(["x", "y"], '[{"filename": "x-1.tgz"}]', Path("/t")) == {}
    assert fetch.packed_tarballs(["x"], '["x-1.tgz"]', Path("/t")) == {}


def test_npm_error_summary():
    assert fetch.npm_error(BAD_TAG).startswith("EINVALIDTAGNAME: Invalid tag name")
    assert fetch.npm_error(NOT_FOUND).startswith("E404: Not Found")
    assert fetch.npm_error(PACKED_TWO) == ""
    assert fetch.npm_error("not json") == ""
