"""The audit in a test suite: :func:`assert_flip_rate`, one call in a pytest test that fails (an
``AssertionError`` with the flip rate, its interval and the worst examples) when a model's labels
depend on the companions of its batch more often than a threshold at its serving batch.

::

    from bnstudy.audit import assert_flip_rate

    def test_labels_do_not_depend_on_the_batch():
        assert_flip_rate(make_model(), x_val, serving_batch=8, at_most=0.01)

With ``groups`` (one id per row: customer, source, day) the rate held to the threshold is that of
batches of one group, the batches a server of grouped traffic sees; without, random batches.
"""

from __future__ import annotations

from .core import audit
from .engine import AuditError


def assert_flip_rate(model, x, y=None, groups=None, *, serving_batch: int, at_most: float, worst: int = 5, **options):
    """Audit ``model`` at ``serving_batch`` and assert that its flip rate there is at most ``at_most``
    (a share: 0.01 for 1%). Returns the :class:`bnstudy.audit.AuditResult` when it holds.

    Probes only what the check needs: random batches of ``serving_batch`` (and one-group batches with
    ``groups``), no exact design, no other size, unless ``options`` (the keywords of
    :func:`bnstudy.audit.audit`) say otherwise. A bad input raises :class:`bnstudy.audit.AuditError`
    (an error, not a failure); a rate above ``at_most`` raises ``AssertionError`` naming the rate,
    its interval and the ``worst`` examples whose labels flip most often.
    """
    if isinstance(at_most, bool) or not isinstance(at_most, (int, float)) or not 0 <= at_most < 1:
        raise AuditError(f"at_most is a flip rate in [0, 1) (0.01 for 1%), got {at_most!r}")
    design = "group" if groups is not None else "random"
    options = {
        "batch_sizes": (serving_batch,),
        "exact_sample": 0,
        "designs_wanted": ("random", "group") if groups is not None else ("random",),
    } | options
    result = audit(model, x, y, groups, serving_batch=serving_batch, **options)
    row = result.flip(serving_batch, design)
    if row is None:
        raise AuditError(f"no {design} batches of {serving_batch} could be formed ({'; '.join(result.notes)})")
    if row["flip_rate"] > at_most:
        examples = result.worst_examples(serving_batch, design, worst)
        listed = ", ".join(f"row {e['example']} ({e['flips']} of {e['probes']} probes)" for e in examples)
        ci = "" if row["ci_low"] != row["ci_low"] else f" [{100 * row['ci_low']:.1f}%, {100 * row['ci_high']:.1f}%]"
        conf = f"{100 * result.settings['confidence']:g}% interval"
        raise AssertionError(
            f"flip rate {100 * row['flip_rate']:.2f}%{ci} ({conf}) at serving batch {serving_batch} in "
            f"{'one-group' if design == 'group' else 'random'} batches is above {100 * at_most:.2f}%: "
            f"{row['flips']} of {row['probes']} training-mode labels differ from inference mode; "
            f"worst examples: {listed}"
        )
    return result
