"""A test that fails when a head stops training, or starts training what it should not."""

from gradscope.testing import assert_gradients


def test_heads_train_only_their_task():
    assert_gradients(
        "configs/multitask.yaml",
        expect={"loss_1": {"none": ["task2/*"], "connected": ["body/*", "task1/*"]}},
    )
