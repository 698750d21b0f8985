"""Sphinx configuration of the skevidence documentation.

The build is offline: no intersphinx, no theme links that fetch anything, and
the gallery examples run in-process with matplotlib's Agg backend. Build with

    sphinx-build -W --keep-going -b html docs docs/_build/html

The examples run at the budgets their text describes (tens of minutes on two cores).
``SKEVIDENCE_EXAMPLE_BUDGET=short`` makes every example run the same estimators
and functions on a smaller budget (fewer ranks, particles, sentences, shorter
chains), for a build of about a minute; CI (``.ci/run``) sets it. The examples
read it themselves (``full``, the default, or ``short``); this file only checks
the value and reports it.
"""

import os
from datetime import date

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import skevidence  # noqa: E402

#: The examples' budget: "full" (unset) or "short" (CI); see the module's docstring.
EXAMPLE_BUDGET = os.environ.get("SKEVIDENCE_EXAMPLE_BUDGET", "full")
if EXAMPLE_BUDGET not in ("full", "short"):
    raise ValueError(f"SKEVIDENCE_EXAMPLE_BUDGET must be 'full' or 'short', got {EXAMPLE_BUDGET!r}.")
print(f"skevidence {skevidence.__version__} from {os.path.dirname(skevidence.__file__)}; "
      f"gallery budget: {EXAMPLE_BUDGET} (SKEVIDENCE_EXAMPLE_BUDGET)")

# -- Project -----------------------------------------------------------------

project = "skevidence"
author = "The skevidence developers"
copyright = f"{date.today().year}, {author}"
release = skevidence.__version__
version = ".".join(release.split(".")[:2])

# -- General -----------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
root_doc = "index"
default_role = "literal"
pygments_style = "sphinx"

# -- autodoc / autosummary ---------------------------------------------------

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "groupwise"}
autodoc_typehints = "none"
autoclass_content = "class"

# -- numpydoc ----------------------------------------------------------------

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- HTML --------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"skevidence {release}"
html_static_path = ["_static"]
html_css_files = ["skevidence.css"]
html_show_sourcelink = False
html_theme_options = {
    # No external icon links, no version switcher, no analytics: the site
    # makes no network request of its own (MathJax is the only remote asset,
    # fetched by the reader's browser to typeset math).
    "icon_links": [],
    "navbar_end": ["theme-switcher"],
    "navbar_persistent": ["search-button"],
    "show_version_warning_banner": False,
    "use_edit_page_button": False,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": []}
html_context = {"default_mode": "light"}

# -- sphinx-gallery ----------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "doc_module": ("skevidence",),
    "backreferences_dir": "api/generated",
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "download_all_examples": False,
    "show_memory": False,
    "min_reported_time": 0,
    "matplotlib_animations": False,
    "plot_gallery": "True",
    # The computation-times page loads jQuery and DataTables from CDNs; the
    # build log still prints every example's time.
    "write_computation_times": False,
}


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """Leave out ``set_<method>_request``: scikit-learn's metadata routing, documented there."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_requests)
