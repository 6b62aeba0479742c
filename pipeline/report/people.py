"""Every statement the card and the report make about what people did, in one place, from the
review files (`review/class_results.json`, `review/results.json`): a sentence that says no person
checked anything is written only when no answer was given, so no apply leaves a claim behind that
its review contradicts."""

from __future__ import annotations

from imagenot.pipeline.report.markdown import count_of


def _class_answers(class_review: dict | None) -> int:
    return class_review["answers"] if class_review else 0


def _image_answers(review: dict | None) -> int:
    return review["answers"] if review else 0


def what_people_did(review: dict | None, class_review: dict | None) -> str:
    """One sentence (no full stop): who read the classes, who checked the images, and what was not looked at."""
    done = []
    if _class_answers(class_review):
        vetoed = len(class_review["vetoed"])
        done.append(
            f"people read {count_of(len(class_review['classes']), 'candidate class')} and dropped "
            f"{count_of(vetoed, 'class')} from the list (see Class review)"
        )
    if _image_answers(review):
        done.append(
            f"people checked the labels of {count_of(review['images_answered'], 'image')} (see Human review); "
            "the other images were not looked at"
        )
    else:
        done.append("no person looked at the images or checked an image's label")
    text = "; ".join(done)
    return text[0].upper() + text[1:]


def limitation(review: dict | None, class_review: dict | None) -> str:
    """The card's Known limitations bullet on human review."""
    if _image_answers(review):
        return "- Human review checked a sample of the labels (see Human review); the rest were not looked at."
    read = " (people read the class list only: see Class review)" if _class_answers(class_review) else ""
    return f"- No human review of the images: no image was looked at and no label checked by a person{read}."


def who_chose(review: dict | None, class_review: dict | None) -> str:
    """The collection process's sentence on who chose the rows (no full stop)."""
    chose = (
        "the steps under How it was built chose the rows, with people dropping classes from the list (Class review)"
        if _class_answers(class_review)
        else "the steps under How it was built chose the rows; no person chose a class or an image"
    )
    checked = (
        "; people checked a sample of the images' labels (Human review)"
        if _image_answers(review)
        else "; no person checked an image"
    )
    return chose + checked
