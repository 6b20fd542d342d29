"""minidp.utils.version: require_version answers for the Paddle API minidp follows (3.3.1), with
Paddle's messages and argument checks."""

import pytest

import minidp


def test_versions_up_to_3_3_1_are_satisfied():
    minidp.utils.require_version("2.0")
    minidp.utils.require_version("3.3.1")
    minidp.utils.require_version("1.0", "4.0")


def test_a_newer_or_narrower_requirement_raises_what_is_required():
    with pytest.raises(Exception, match=r"VersionError: PaddlePaddle version 4\.0 or higher is required"):
        minidp.utils.require_version("4.0")
    with pytest.raises(Exception, match=r"VersionError: PaddlePaddle version in \[1\.0, 2\.0\] required"):
        minidp.utils.require_version("1.0", "2.0")


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="min_version"):
        minidp.utils.require_version(2)
    with pytest.raises(ValueError, match="max_version"):
        minidp.utils.require_version("1.0", "two")
    with pytest.raises(ValueError, match="min_version"):
        minidp.utils.require_version("1.2.3.4.5")
