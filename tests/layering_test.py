"""The layering checker's own tests (`python3 -m unittest tests/layering_test.py`, run by
tests/layering.sh before it checks the tree): each rule found where it is broken, and not where
it is kept."""

import pathlib
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import layering  # noqa: E402


def tree(files):
    """A crate's `src` made of `files` ({relative path: text}), in a temporary directory."""
    root = tempfile.TemporaryDirectory()
    src = pathlib.Path(root.name) / "src"
    for name, text in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root, src


class Paths(unittest.TestCase):
    def test_a_group_is_unfolded_to_its_last_item(self):
        text = "use crate::{a::{b, c::D}, d};\nfn f() { crate::e::g(); }"
        self.assertEqual(sorted(layering.used_paths(text)), ["a::b", "a::c::D", "d", "e::g"])

    def test_renamed_and_self_items(self):
        text = "use crate::{a::{self, B as C}};"
        self.assertEqual(sorted(layering.used_paths(text)), ["a", "a::B"])

    def test_comments_name_nothing(self):
        text = layering.strip_comments("// crate::a::b\nuse crate::c;")
        self.assertEqual(list(layering.used_paths(text)), ["c"])


class Circles(unittest.TestCase):
    def test_a_circle_through_a_group_is_found(self):
        root, src = tree({
            "lib.rs": "mod a; mod b; mod c;",
            "a.rs": "use crate::{b::{X}, c};",
            "b.rs": "use crate::c::Y;",
            "c.rs": "use crate::{d::{Z}, a};",
            "d.rs": "",
        })
        with root:
            self.assertEqual(layering.module_cycles(src), [["a", "b", "c", "a"]])

    def test_modules_that_form_no_circle_pass(self):
        root, src = tree({"lib.rs": "", "a.rs": "use crate::b;", "b.rs": "use crate::ids;"})
        with root:
            self.assertEqual(layering.module_cycles(src), [])

    def test_a_folders_door_re_exporting_a_child_is_no_circle(self):
        root, src = tree({
            "lib.rs": "",
            "q/mod.rs": "mod sweep;\nmod listing;\npub use listing::*;\npub(crate) use sweep::run;",
            "q/listing.rs": "pub fn publish() {}",
            "q/sweep.rs": "use crate::q::publish;",
        })
        with root:
            self.assertEqual(layering.module_cycles(src), [])

    def test_circles_between_files_of_two_folders_are_found(self):
        root, src = tree({
            "lib.rs": "",
            "p/mod.rs": "pub mod plans;",
            "p/plans.rs": "use crate::a::decide::x;",
            "a/mod.rs": "pub mod decide;",
            "a/decide.rs": "use crate::p::plans::y;",
        })
        with root:
            self.assertEqual(
                layering.module_cycles(src), [["a::decide", "p::plans", "a::decide"]]
            )


class Folders(unittest.TestCase):
    def files(self):
        return {
            "lib.rs": "",
            "f/mod.rs": "pub mod open;\npub(crate) mod inner;\nmod view;\npub use view::*;\n"
                        "pub(crate) use inner::Door;\npub fn direct() {}",
            "f/open.rs": "pub fn x() {}",
            "f/inner.rs": "pub struct Door; pub fn hidden() {}",
            "f/view.rs": "pub struct Shown;",
            "f/sibling.rs": "use crate::f::inner::hidden;",
        }

    def breaches(self, user):
        files = self.files()
        files["g.rs"] = user
        root, src = tree(files)
        with root:
            return layering.folder_breaches(src)

    def test_another_folder_uses_only_the_door(self):
        for fine in ["use crate::f::open::x;", "use crate::f::Door;", "use crate::f::direct;",
                     "use crate::f::Shown;", "use crate::f::{open, Shown};"]:
            self.assertEqual(self.breaches(fine), [], fine)
        self.assertEqual(
            self.breaches("use crate::{f::{inner::hidden}, ids};"),
            ["g uses f::inner::hidden, which f does not export"],
        )

    def test_modules_of_one_folder_use_each_other(self):
        self.assertEqual(self.breaches(""), [])


if __name__ == "__main__":
    unittest.main()
