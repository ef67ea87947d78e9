"""agent.images: the user message's content parts, and what an image counts for a local token estimate."""

from __future__ import annotations

import base64

from agent.images import IMAGE_TOKENS, ImageInput, content_chars, user_content


def test_a_question_without_images_stays_plain_text() -> None:
    assert user_content("hello", []) == "hello"


def test_images_follow_the_question_as_data_url_parts_in_order() -> None:
    a, b = ImageInput("a.png", "image/png", b"\x89PNG-a"), ImageInput("b.jpg", "image/jpeg", b"\xff\xd8-b")
    content = user_content("compare these", [a, b])
    assert content[0] == {"type": "text", "text": "compare these"}
    assert [part["image_url"]["url"] for part in content[1:]] == [
        "data:image/png;base64," + base64.b64encode(b"\x89PNG-a").decode(),
        "data:image/jpeg;base64," + base64.b64encode(b"\xff\xd8-b").decode(),
    ]


def test_an_image_counts_as_its_tokens_not_its_base64_length() -> None:
    big = ImageInput("big.png", "image/png", b"\0" * 3_000_000)
    assert content_chars(user_content("hi", [big])) == 2 + IMAGE_TOKENS * 4
    assert content_chars("four") == 4 and content_chars(None) == 0
