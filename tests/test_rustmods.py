"""Rust glob imports resolved among the workspace's files (engine/rustmods.py), through the invented-names check."""

import subprocess

from engine import worklines
from engine.languages import spec_for
from engine.names import invented_names
from engine.rustmods import library_names, locate, scan

RUST = spec_for("rust")


def test_a_files_module_level_items_public_and_private_and_its_globs_are_found_by_a_scan():
    text = ("//! decode\nmod dec;\npub mod bytes;\npub use self::dec::{read_f32, read_f64 as f64_of};\n"
            "pub use self::ext::{\n    read_fixext1, // one\n    read_ext_meta,\n};\npub use self::sint::*;\n"
            "use std::fmt::{self, Display};\nuse crate::Marker;\nuse core::io::*;\n\n"
            "pub fn read_int<T>(rd: &mut R) -> T {\n    fn inner() {}\n    todo!()\n}\n"
            "pub(crate) const fn marker_len() -> u32 { 0 }\nconst LIMIT: usize = 3;\npub static mut COUNT: u8 = 0;\n"
            "pub unsafe extern \"C\" fn raw() {}\nstruct Private;\npub enum Kind { A, B }\npub trait RmpRead {}\n"
            "pub type Res = u8;\nmacro_rules! bail { () => {} }\nimpl Private {\n    pub fn method(&self) {}\n}\n"
            "mod tests {\n    use super::*;\n    use crate::util::*;\n    fn helper() {}\n}\n"
            "pub extern crate alloc as heap;\nunion U { a: u8 }\npub fn r#match() {}\n")
    items = scan(text)
    assert items.public == {"bytes", "read_f32", "f64_of", "read_fixext1", "read_ext_meta", "read_int", "marker_len",
                            "COUNT", "raw", "Kind", "RmpRead", "Res", "bail", "heap", "match"}
    assert items.private == {"dec", "fmt", "Display", "Marker", "LIMIT", "Private", "tests", "U"}
    assert items.globs == ((("self", "sint"), True), (("core", "io"), False))
    assert items.nested == (("super",), ("crate", "util"))   # inside ``mod tests``: not the module's own


def test_a_files_module_is_found_from_its_path():
    files = {"/w/rmp/src/lib.rs", "/w/rmp/src/decode/mod.rs", "/w/rmp/src/decode/sint.rs"}
    has = files.__contains__
    assert locate("/w/rmp/src/lib.rs", has) == ("/w/rmp/src", "/w/rmp/src/lib.rs", "/w/rmp", ())
    assert locate("/w/rmp/src/decode/mod.rs", has) == ("/w/rmp/src", "/w/rmp/src/lib.rs", "/w/rmp", ("decode",))
    assert locate("/w/rmp/src/decode/sint.rs", has).module == ("decode", "sint")
    assert locate("/w/rmp/benches/bench.rs", has) == ("/w/rmp/benches", "/w/rmp/benches/bench.rs", "/w/rmp", ())
    assert locate("/w/rmp/tests/func/mod.rs", has) == ("/w/rmp/tests", None, "/w/rmp", ("func",))
    assert locate("/w/rmp/src/bin/tool.rs", has) == ("/w/rmp/src/bin", "/w/rmp/src/bin/tool.rs", "/w/rmp", ())
    assert locate("/w/scripts/build.rs", has) is None and locate("/w/rmp/src/x.py", has) is None


def test_a_librarys_name_is_its_cargo_tomls_else_its_folders_less_a_version(tmp_path):
    assert library_names("/x/rmp-0.8.11", None) == {"rmp"}
    assert library_names("debian:librust-x/usr/share/cargo/registry/serde-json-1.0.2-rc1", None) == {"serde_json"}
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "msg-pack"\nversion = "1.0.0"\n\n[lib]\nname = "mp"\n')
    assert library_names(str(tmp_path), str(tmp_path)) == {tmp_path.name.replace("-", "_"), "msg_pack", "mp"}


def _crate(root):
    """A real mini-crate on disk, scanned as the server scans its workspace folder."""
    files = {
        "Cargo.toml": '[package]\nname = "minipack"\nversion = "0.1.0"\n',
        "src/lib.rs": "pub mod decode;\nmod util;\npub use crate::util::*;\n\npub const VERSION: u32 = 5;\n",
        "src/util.rs": "pub fn checksum(data: &[u8]) -> u32 {\n    data.len() as u32\n}\n\nfn secret() -> u8 { 1 }\n",
        "src/decode/mod.rs": ("mod sint;\npub use self::sint::*;\nuse std::io::Cursor;\n\n"
                              "pub fn read_int(rd: &mut &[u8]) -> Option<i64> {\n    read_i64(rd)\n}\n\n"
                              "fn read_marker(rd: &mut &[u8]) -> u8 {\n    rd[0]\n}\n"),
        "src/decode/sint.rs": "pub fn read_i64(rd: &mut &[u8]) -> Option<i64> {\n    Some(rd[0] as i64)\n}\n",
        "src/decode/tests.rs": "use super::*;\n\n#[test]\nfn reads() {\n    assert!(true);\n}\n",
        "benches/bench.rs": ("use minipack::decode::*;\n\nfn bench() {\n    let buf = [1u8];\n"
                             "    let res = read_i64(&mut &buf[..]);\n}\n"),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return worklines.scan(root)


def _invented(ws, path, document, fill):
    start = document.index("<>")
    text = document.replace("<>", "", 1)
    return invented_names(RUST, text, start, fill, defined=ws.defined("rust", str(path), text))


def test_names_a_glob_import_brings_from_the_crates_files_are_not_invented(tmp_path):
    """rmp's benches/bench.rs reads ``read_int`` through ``use rmp::decode::*;``: the right fill was reported as
    inventing it (the development set's one Rust right answer flagged). With the workspace's files of the module the
    glob names, its public items are defined, through re-exports (``pub use self::sint::*``); its private ones are
    not, nor a name no file defines."""
    root = tmp_path / "minipack"
    ws = _crate(root)
    bench = "use minipack::decode::*;\n\nfn bench() {\n    let buf = [1u8];\n    let res = <>;\n}\n"
    path = root / "benches" / "bench.rs"
    assert invented_names(RUST, bench.replace("<>", ""), bench.index("<>"), "read_int(&mut &buf[..])") == ["read_int"]
    assert _invented(ws, path, bench, "read_int(&mut &buf[..])") == []         # decode/mod.rs
    assert _invented(ws, path, bench, "read_i64(&mut &buf[..])") == []         # re-exported from decode/sint.rs
    assert _invented(ws, path, bench, "read_marker(&mut &buf[..])") == ["read_marker"]   # private to decode
    assert _invented(ws, path, bench, "Cursor::new(buf)") == ["Cursor"]          # decode's private import
    assert _invented(ws, path, bench, "read_uint(&mut &buf[..])") == ["read_uint"]       # defined nowhere
    # an external crate's glob resolves to nothing: as before
    ext = bench.replace("minipack::decode", "rmp::decode")
    assert _invented(ws, path, ext, "read_int(&mut &buf[..])") == ["read_int"]


def test_a_child_modules_use_super_glob_sees_the_parents_private_items_and_imports(tmp_path):
    root = tmp_path / "minipack"
    ws = _crate(root)
    tests = "use super::*;\n\n#[test]\nfn reads() {\n    let buf = [1u8];\n    <>;\n}\n"
    path = root / "src" / "decode" / "tests.rs"
    for fill in ("read_marker(&mut &buf[..])", "read_int(&mut &buf[..])", "read_i64(&mut &buf[..])",
                 "Cursor::new(buf)"):
        assert _invented(ws, path, tests, fill) == [], fill
    assert _invented(ws, path, tests, "checksum(&buf)") == ["checksum"]   # the crate root's, not decode's
    # crate:: from a file of the crate: the root's public re-export of util's items, not util's private ones
    lib_glob = tests.replace("use super::*;", "use crate::*;")
    assert _invented(ws, path, lib_glob, "checksum(&buf)") == []
    assert _invented(ws, path, lib_glob, "secret()") == ["secret"]
    # in an inline test module ``super`` is the document's own module; an absolute path still resolves
    inline = ("fn own() {}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::decode::*;\n\n"
              "    fn t() {\n        <>;\n    }\n}\n")
    path = root / "src" / "util.rs"
    assert _invented(ws, path, inline, "read_int(&mut &[1u8][..])") == []
    assert _invented(ws, path, inline, "read_marker(&mut &[1u8][..])") == ["read_marker"]


# rand 0.8.5's src/rngs/mod.rs (Debian's librust-rand-dev), its module items: attributes before an item on its line
RAND_RNGS = '''#[cfg_attr(doc_cfg, doc(cfg(feature = "std")))]
#[cfg(feature = "std")] pub mod adapter;

pub mod mock; // Public so we don't export `StepRng` directly, making it a bit
              // more clear it is intended for testing.

#[cfg(all(feature = "small_rng", target_pointer_width = "64"))]
mod xoshiro256plusplus;
#[cfg(all(feature = "small_rng", not(target_pointer_width = "64")))]
mod xoshiro128plusplus;
#[cfg(feature = "small_rng")] mod small;

#[cfg(feature = "std_rng")] mod std;
#[cfg(all(feature = "std", feature = "std_rng"))] pub(crate) mod thread;

#[cfg(feature = "small_rng")] pub use self::small::SmallRng;
#[cfg(feature = "std_rng")] pub use self::std::StdRng;
#[cfg(all(feature = "std", feature = "std_rng"))] pub use self::thread::ThreadRng;

#[cfg_attr(doc_cfg, doc(cfg(feature = "getrandom")))]
#[cfg(feature = "getrandom")] pub use rand_core::OsRng;
'''


def test_items_after_attributes_on_their_line_are_the_modules(tmp_path):
    """The scan read an item only where its line starts with it: rand's ``src/rngs/mod.rs`` writes its ``cfg``
    attributes on the item's line, and of its public names (``StdRng``, ``SmallRng``, ``ThreadRng``, ``OsRng``,
    ``adapter``, ``thread``, ``mock``) only ``mock`` was found, so ``use rand::rngs::*`` left ``StdRng`` invented.
    An item inside an inline module (``mod inner { pub fn f() }``) is still not the file's, indented or not."""
    items = scan(RAND_RNGS + "#[cfg(test)] mod tests {\n    #[test] fn inner_item() {}\n}\n"
                 "#[inline] #[doc = \"[a]\"] pub fn helper() {}\n#[macro_export] macro_rules! m { () => {} }\n")
    assert items.public == {"adapter", "mock", "thread", "SmallRng", "StdRng", "ThreadRng", "OsRng", "helper", "m"}
    assert items.private == {"xoshiro256plusplus", "xoshiro128plusplus", "small", "std", "tests"}
    root = tmp_path / "rand"
    files = {"Cargo.toml": '[package]\nname = "rand"\nversion = "0.8.5"\n', "src/lib.rs": "pub mod rngs;\n",
             "src/rngs/mod.rs": RAND_RNGS, "src/rngs/std.rs": "pub struct StdRng;\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    ws = worklines.scan(root)
    example = "use rand::rngs::*;\n\nfn main() {\n    let rng = <>;\n}\n"
    path = root / "examples" / "seed.rs"
    assert _invented(ws, path, example, "StdRng::default()") == []
    assert _invented(ws, path, example, "FastRng::default()") == ["FastRng"]
