"""Documents about events to JSON: `extract/invitation-v2`, `extract/appointment-letter-v2`,
`extract/meeting-minutes-v2`.

Each domain writes one document and asks for its record (see `record.py` for the
prompt and the scoring). What difficulty adds, per domain:

- invitation: a "doors open" time before the start, a general contact address beside
  the RSVP one, last year's date, longer date and time formats;
- appointment letter: the letter's date and a hospital number, then a rescheduled
  appointment (the old date and time stay in the letter), check-in time in words
  ("a quarter of an hour") and a CC'd doctor;
- meeting minutes: more attendees (3 → 8) and action items (1 → 4), then apologies
  (people not present), an action closed from the last meeting and the next meeting's
  date.

`measure` counts the values the document holds (gold values, list items field by
field, plus distractors); it depends only on difficulty.

Not guaranteed: event names, venues, departments and tasks come from small pools;
action items are written in one fixed pattern ("ACTION - owner: task (due date)").
"""

from __future__ import annotations

import random

from posttrain.domains.extract import documents as d
from posttrain.domains.extract.record import Doc, ExtractDomain, Field

EVENTS = ("Spring Charity Gala", "Annual Volunteer Awards", "Product Launch Evening",
          "Harvest Supper Club", "Founders' Day Reception", "Winter Book Fair")  # fmt: skip
VENUES = ("The Glasshouse", "Riverside Pavilion", "Marlow Hotel Ballroom", "Old Mill Gallery",
          "Lakeside Boathouse")  # fmt: skip
DRESS = ("casual", "business casual", "cocktail", "black tie")
DEPARTMENTS = ("Cardiology", "Dermatology", "Orthopaedics", "Gastroenterology", "Ophthalmology")
ROOMS = ("Outpatient Clinic 3, Level 2", "Imaging Suite B, Ground Floor", "East Wing, Room 114",
         "Day Unit, Level 4")  # fmt: skip
ARRIVE = {10: "ten minutes", 15: "a quarter of an hour", 20: "twenty minutes", 30: "half an hour"}
TASKS = (
    "Send the revised budget to finance", "Book the venue for the offsite",
    "Draft the customer survey", "Update the onboarding checklist",
    "Review the vendor contract", "Fix the broken dashboard link",
    "Schedule interviews for the analyst role", "Share the third-quarter sales figures",
    "Order replacement laptops", "Write up the pilot results",
)  # fmt: skip
TOPICS = ("Budget review", "Office move", "Hiring plan", "Customer feedback", "Quarterly targets",
          "Supplier issues", "Training calendar", "Website refresh")  # fmt: skip
TEAMS = ("Operations", "Product", "Finance", "Facilities", "Partnerships")


class Invitation(ExtractDomain):
    """An event invitation: what, who hosts, when (date, start, end), where, how to RSVP."""

    id = "extract/invitation-v2"
    kind = "invitation"
    fields = (
        Field("event", "text", "the event's name"),
        Field("host", "text", "who hosts the event"),
        Field("date", "date", "the day of the event"),
        Field("start_time", "time", "when the event starts"),
        Field("end_time", "time", "when the event ends"),
        Field("venue", "text", "the venue's name"),
        Field("city", "text", "the venue's city"),
        Field("dress_code", "choice", "the dress code", choices=DRESS),
        Field("rsvp_by", "date", "the last day to reply"),
        Field("rsvp_email", "email", "the address replies go to"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        event, venue, dress = rng.choice(EVENTS), rng.choice(VENUES), rng.choice(DRESS)
        host, place = d.company(rng), d.address(rng)
        when = d.day(rng)
        rsvp = d.shifted(when, -rng.randint(7, 30))
        start = rng.randint(11, 18) * 60 + rng.choice((0, 30))  # ends by 23:00 at the latest
        end = start + rng.randint(2, 4) * 60 + rng.choice((0, 30))
        style, tstyle = rng.choice(d.date_styles(difficulty)), rng.choice(d.time_styles(difficulty))
        host_site = d.web_domain(host)
        reply = f"rsvp@{host_site}"

        def at(minutes: int) -> str:
            return d.time_text(minutes // 60, minutes % 60, tstyle)

        lines = ["You're invited!", "", f"{host} requests the pleasure of your company at the",
                 event, f"on {d.date_text(when, style)}, from {at(start)} until {at(end)},",
                 f"at {venue}, {place.one_line()}."]  # fmt: skip
        distractors: dict[str, object] = {"date": d.iso(rsvp)}
        if difficulty >= 4:
            lines.append(f"Doors open at {at(start - 30)}; dinner is served an hour later.")
            distractors = {"start_time": d.clock((start - 30) // 60, (start - 30) % 60), **distractors}  # fmt: skip
        lines += ["", f"Dress code: {dress.title() if difficulty < 5 else dress + ' attire'}",
                  f"Kindly RSVP by {d.date_text(rsvp, style)} to {reply}."]  # fmt: skip
        if difficulty >= 5:
            lines.append(f"For any other questions, write to info@{host_site}.")
            distractors["rsvp_email"] = f"info@{host_site}"
        if difficulty >= 7:
            last = when.replace(year=when.year - 1, day=min(when.day, 28))
            lines.append(f"Last year's edition on {d.date_text(last, style)} welcomed over {rng.randint(80, 400)} guests.")  # fmt: skip
        lines += ["", *d.filler(rng, difficulty // 3)]
        gold = {"event": event, "host": host, "date": d.iso(when),
                "start_time": d.clock(start // 60, start % 60), "end_time": d.clock(end // 60, end % 60),
                "venue": venue, "city": place.city, "dress_code": dress, "rsvp_by": d.iso(rsvp),
                "rsvp_email": reply}  # fmt: skip
        measure = 10 + (difficulty >= 4) + (difficulty >= 5) + 2 * (difficulty >= 7) + difficulty // 3  # fmt: skip
        return Doc("\n".join(lines), gold, measure, distractors)


class AppointmentLetter(ExtractDomain):
    """A hospital appointment letter, possibly rescheduling an earlier appointment."""

    id = "extract/appointment-letter-v2"
    kind = "appointment letter"
    fields = (
        Field("patient", "text", "the patient's full name"),
        Field("date_of_birth", "date", "the patient's date of birth"),
        Field("clinician", "text", "who the appointment is with, as written (with title)"),
        Field("department", "text", "the hospital department"),
        Field("appointment_date", "date", "the date of the (new) appointment"),
        Field("appointment_time", "time", "the time of the (new) appointment"),
        Field("location", "text", "where in the hospital to go, as written"),
        Field("arrive_minutes_early", "integer", "how many minutes early to arrive"),
        Field("fasting_required", "boolean", "true when the patient must not eat beforehand"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        patient, doctor, gp, clerk = d.people(rng, 4)
        clinician, other = f"Dr. {doctor}", f"Dr. {gp}"
        dept, room = rng.choice(DEPARTMENTS), rng.choice(ROOMS)
        born = d.day(rng, 1940, 2005)
        sent = d.day(rng)
        when = d.shifted(sent, rng.randint(10, 60))
        old = d.shifted(when, -rng.randint(3, 9))
        hour, minute = rng.randint(8, 16), rng.choice((0, 15, 30, 45))
        early = rng.choice(tuple(ARRIVE))
        fasting = rng.random() < 0.5
        style, tstyle = rng.choice(d.date_styles(difficulty)), rng.choice(d.time_styles(difficulty))
        site = d.address(rng)
        lines = [f"{site.city} General Hospital", f"{dept} Department", *site.lines()]
        if difficulty >= 3:
            lines += [d.date_text(sent, style), "", f"Hospital number: {rng.randint(1000000, 9999999)}"]  # fmt: skip
        lines += [f"Patient: {patient}", f"Date of birth: {d.date_text(born, style)}", "",
                  f"Dear {patient},", ""]  # fmt: skip
        at = f"{d.date_text(when, style)} at {d.time_text(hour, minute, tstyle)}"
        distractors: dict[str, object] = {"appointment_date": d.iso(sent) if difficulty >= 3 else d.iso(old)}  # fmt: skip
        if difficulty >= 5:
            old_at = d.time_text(hour - 1, minute, tstyle)
            lines.append(f"We are sorry to tell you that your appointment on {d.date_text(old, style)} at {old_at} "
                         f"has had to be moved. Your new appointment with {clinician} is on {at}, in {room}.")  # fmt: skip
            distractors = {"appointment_date": d.iso(old), "appointment_time": d.clock(hour - 1, minute)}  # fmt: skip
        else:
            lines.append(
                f"An appointment has been booked for you with {clinician} on {at}, in {room}."
            )
        wait = f"{early} minutes" if difficulty < 6 else ARRIVE[early]
        lines.append(f"Please arrive {wait} before your appointment time to check in.")
        lines.append("Please do not eat anything for 8 hours before your appointment."
                     if fasting else "You may eat and drink as normal before your appointment.")  # fmt: skip
        lines += ["", *d.filler(rng, difficulty // 4), "", "Yours sincerely,", clerk,
                  "Appointments Office"]  # fmt: skip
        if difficulty >= 7:
            lines.append(f"cc: {other}, General Practitioner")
            distractors["clinician"] = other
        gold = {"patient": patient, "date_of_birth": d.iso(born), "clinician": clinician,
                "department": dept, "appointment_date": d.iso(when),
                "appointment_time": d.clock(hour, minute), "location": room,
                "arrive_minutes_early": early, "fasting_required": fasting}  # fmt: skip
        measure = 9 + 2 * (difficulty >= 3) + 2 * (difficulty >= 5) + (difficulty >= 7) + difficulty // 4  # fmt: skip
        return Doc("\n".join(lines), gold, measure, distractors)


class MeetingMinutes(ExtractDomain):
    """Meeting minutes: the date, the chair, who attended and the open action items."""

    id = "extract/meeting-minutes-v2"
    kind = "set of meeting minutes"
    fields = (
        Field("meeting_date", "date", "the date of this meeting"),
        Field("chair", "text", "who chaired the meeting"),
        Field("attendees", "list", "everyone present, the chair included",
              items=(Field("", "text", "a name"),)),
        Field("action_items", "list", "the new actions agreed at this meeting", items=(
            Field("task", "text", "the action's text as written, without owner or due date"),
            Field("owner", "text", "who owns the action"),
            Field("due", "date", "the action's due date"))),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        names = d.people(rng, 5 + difficulty // 2)
        present, absent = names[: 3 + difficulty // 2], names[3 + difficulty // 2 :]
        chair = present[0]
        when = d.day(rng)
        style = rng.choice(d.date_styles(difficulty))
        n_actions = 1 + difficulty // 3
        tasks = rng.sample(TASKS, n_actions + 1)
        dues = [d.shifted(when, rng.randint(3, 30)) for _ in range(n_actions)]
        actions = [{"task": task, "owner": rng.choice(present), "due": d.iso(due)}
                   for task, due in zip(tasks, dues, strict=False)]  # fmt: skip
        shuffled = rng.sample(present, len(present))
        lines = [f"{rng.choice(TEAMS)} team meeting - minutes", f"Date: {d.date_text(when, style)}",
                 f"Chair: {chair}", f"Present: {', '.join(shuffled)}"]  # fmt: skip
        distractors: dict[str, object] = {"chair": shuffled[-1] if shuffled[-1] != chair else shuffled[0]}  # fmt: skip
        if difficulty >= 3:
            lines.append(f"Apologies: {', '.join(absent)}")
            distractors = {"attendees": [*present, absent[0]], **distractors}
        lines += ["", "1. Minutes of the last meeting were approved."]
        if difficulty >= 5:
            lines.append(f"   Closed: {absent[-1]} completed '{tasks[-1]}' ahead of schedule.")
        for i, (action, due) in enumerate(zip(actions, dues, strict=True), start=2):
            lines += [f"{i}. {rng.choice(TOPICS)}: discussed; see the attached notes.",
                      f"   ACTION - {action['owner']}: {action['task']} (due {d.date_text(due, style)})"]  # fmt: skip
        if difficulty >= 7:
            nxt = d.shifted(when, 14)
            lines.append(f"Next meeting: {d.date_text(nxt, style)}, same room.")
            distractors["meeting_date"] = d.iso(nxt)
        gold = {"meeting_date": d.iso(when), "chair": chair, "attendees": present, "action_items": actions}  # fmt: skip
        measure = 2 + len(present) + 3 * n_actions + len(absent) * (difficulty >= 3) + (difficulty >= 5) + (difficulty >= 7)  # fmt: skip
        return Doc("\n".join(lines), gold, measure, distractors)


DOMAINS = (Invitation(), AppointmentLetter(), MeetingMinutes())
