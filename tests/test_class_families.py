"""A parameter named ``<family>Object`` takes a class of the package named after that family
(``asn1Object``: ``Asn1Type``), the most specific first; ``*fields`` takes the package's
``Field`` objects, which the singular names."""

from __future__ import annotations

from apiprof.engine.scenarios.classnames import classes_named_by
from apiprof.engine.scenarios.synth import synthesize


def test_a_family_object_is_one_of_the_classes_named_after_the_family():
    import family_pkg

    classes = {name: getattr(family_pkg, name) for name in ("ShapeItem", "ShapeType", "Field")}
    assert classes_named_by("shapeObject", classes) == [family_pkg.ShapeType, family_pkg.ShapeItem]
    assert classes_named_by("shape_obj", classes) == [family_pkg.ShapeType, family_pkg.ShapeItem]
    assert classes_named_by("fieldObject", classes) == []  # no Field* family root: no guess


def test_star_args_named_after_a_package_class_are_its_instances():
    import family_pkg

    made = synthesize("family_pkg.Fields", 10)
    assert len(made.args) == 2 and all(isinstance(a, family_pkg.Field) for a in made.args)
    assert made.target(*made.args).tags == ["shape", "shape"]
    receiver = synthesize("family_pkg.Fields.count", 10)
    assert receiver.target() == 2
