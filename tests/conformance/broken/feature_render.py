"""Breaks feature.rrect: the probe lists rrect, and drawing one raises."""
from _base import main, rect_runner

rect_runner.FEATURES = ["rect", "rrect"]
render = rect_runner.render


def render_or_raise(scene):
    if any(op["op"] == "rrect" for op in scene["ops"]):
        raise NotImplementedError("rrect")
    return render(scene)


rect_runner.render = render_or_raise
main()
