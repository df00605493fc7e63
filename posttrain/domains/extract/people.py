"""Documents about people to JSON: `extract/contact-signature-v2`, `extract/job-posting-v2`,
`extract/resume-v2`.

Each domain writes one document and asks for its record (see `record.py` for the
prompt and the scoring). What difficulty adds, per domain:

- contact signature: a CC'd colleague, a main switchboard beside the direct line, an
  address line, and a quoted earlier message carrying another person's signature;
- job posting: more required skills, a "nice to have" list (distractor skills), the
  posting date beside the apply-by date, salaries as "$85k" and experience in words;
- résumé: more jobs (1 → 4), month formats from "2021-04" to "04/2021", a
  certification year and a referee (distractors for the education and the name).

`measure` counts the values the document holds (gold values, list items field by
field, plus distractors); it depends only on difficulty.

Not guaranteed: titles, skills, universities and degrees come from small pools; a
job's dates never overlap the next one's and the latest job may be "present".
"""

from __future__ import annotations

import random

from posttrain.domains.extract import documents as d
from posttrain.domains.extract.record import Doc, ExtractDomain, Field

TITLES = (
    "Operations Manager", "Senior Data Analyst", "Account Executive", "Product Designer",
    "Software Engineer", "Procurement Lead", "Marketing Coordinator", "Research Scientist",
    "Customer Success Manager", "Financial Controller", "Quality Engineer", "HR Partner",
)  # fmt: skip
SKILLS = (
    "Python", "SQL", "Excel", "Tableau", "Kubernetes", "Figma", "Salesforce", "SAP",
    "Java", "Power BI", "AutoCAD", "Terraform", "Spanish", "Project management",
    "Statistics", "Go", "React", "Technical writing",
)  # fmt: skip
UNIVERSITIES = ("University of Vermont", "Boise State University", "Tufts University",
                "University of Oregon", "Rice University", "Creighton University")  # fmt: skip
DEGREES = ("B.Sc. Computer Science", "B.A. Economics", "M.Sc. Statistics", "B.Eng. Mechanical Engineering", "MBA")  # fmt: skip
BULLETS = ("Led a team of {} people", "Cut processing costs by {} percent",
           "Managed {} key client accounts", "Shipped {} internal tools")  # fmt: skip
WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


class ContactSignature(ExtractDomain):
    """The latest sender's contact card from an e-mail thread's signature."""

    id = "extract/contact-signature-v2"
    kind = "e-mail"
    fields = (
        Field("name", "text", "full name of the person who wrote the latest message"),
        Field("job_title", "text", "that person's job title"),
        Field("company", "text", "that person's company"),
        Field("email", "email", "that person's e-mail address"),
        Field("phone", "phone", "that person's direct phone line (digits, any format)"),
        Field("city", "text", "the city of that person's office"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        sender, reader, cc = d.people(rng, 3)
        firm, other = d.companies(rng, 2)
        title, other_title = rng.sample(TITLES, 2)
        office = d.address(rng)
        direct, main, theirs = d.distinct(rng, d.phone, 3)
        host, other_host = d.web_domain(firm), d.web_domain(other)
        mail, reader_mail = d.email(sender, host), d.email(reader, other_host)
        styles = ("dashes", "parens", "dots", "intl")[: 1 + difficulty // 3]
        fmt = rng.choice(styles)
        lines = [f"From: {sender} <{mail}>", f"To: {reader} <{reader_mail}>"]
        distractors: dict[str, object] = {"name": reader}
        if difficulty >= 3:
            lines.append(f"Cc: {cc} <{d.email(cc, host)}>")
            distractors = {"email": d.email(cc, host), **distractors}
        lines += [f"Subject: Re: {rng.choice(('quarterly review', 'site visit', 'contract renewal', 'sample order'))}",
                  "", f"Hi {reader.split()[0]},", "", rng.choice(d.FILLER), "", "Best regards,",
                  sender, title, firm]  # fmt: skip
        if difficulty >= 5:
            lines.append(office.one_line())
        else:
            lines.append(f"{office.city} office")
        if difficulty >= 4:
            lines.append(f"Direct: {d.phone_text(direct, fmt)} | Main: {d.phone_text(main, fmt)}")
            distractors["phone"] = main
        else:
            lines.append(f"Tel: {d.phone_text(direct, fmt)}")
        lines.append(f"{mail} | www.{host}")
        if difficulty >= 6:
            lines += ["", f"> On {d.date_text(d.day(rng), 'us')}, {reader} wrote:",
                      f"> {rng.choice(d.FILLER)}", ">", f"> {reader}", f"> {other_title}",
                      f"> {other}", f"> Tel: {d.phone_text(theirs, fmt)}"]  # fmt: skip
            distractors = {"job_title": other_title, **distractors}
        gold = {"name": sender, "job_title": title, "company": firm, "email": mail,
                "phone": direct, "city": office.city}  # fmt: skip
        measure = 6 + (difficulty >= 3) + (difficulty >= 4) + 3 * (difficulty >= 5) + 4 * (difficulty >= 6)  # fmt: skip
        return Doc("\n".join(lines), gold, measure, distractors)


class JobPosting(ExtractDomain):
    """A job advert: role, terms, salary range, required skills and the deadline."""

    id = "extract/job-posting-v2"
    kind = "job posting"
    fields = (
        Field("title", "text", "the job title"),
        Field("company", "text", "the hiring company"),
        Field("city", "text", "the city of the job"),
        Field("employment_type", "choice", "the kind of contract",
              choices=("full-time", "part-time", "contract", "internship")),
        Field("remote", "boolean", "true when the job can be done fully remotely"),
        Field("salary_min", "number", "the lowest annual salary offered"),
        Field("salary_max", "number", "the highest annual salary offered"),
        Field("min_years_experience", "integer", "the minimum years of experience required"),
        Field("required_skills", "list", "the required skills (not the nice-to-have ones), as written",
              items=(Field("", "text", "a skill"),)),
        Field("apply_by", "date", "the application deadline"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        title = rng.choice(TITLES)
        firm, place = d.company(rng), d.address(rng)
        kind = rng.choice(("full-time", "part-time", "contract", "internship"))
        remote = rng.random() < 0.5
        low = rng.randint(40, 120) * 1000
        high = low + rng.randint(5, 30) * 1000
        years = rng.randint(1, 8)
        skills = rng.sample(SKILLS, 2 + difficulty // 2 + (difficulty >= 4) * 3)
        required, nice = skills[: 2 + difficulty // 2], skills[2 + difficulty // 2 :]
        posted = d.day(rng)
        deadline = d.shifted(posted, rng.randint(14, 60))
        style = rng.choice(d.date_styles(difficulty))
        labels = {"full-time": "Full-time", "part-time": "Part-time", "contract": "Fixed-term contract",
                  "internship": "Internship"}  # fmt: skip
        where = "fully remote (anywhere in the US)" if remote else "on-site, no remote work"
        pay = (f"${low:,} - ${high:,} per year" if difficulty < 6
               else f"{d.money_text(low, 'k')}–{d.money_text(high, 'k')} a year")  # fmt: skip
        need = f"{years}+ years" if difficulty < 6 else f"at least {WORDS[years]} years"
        lines = [f"{firm} is hiring: {title}", "",
                 f"Location: {place.city}, {place.state} - {where}",
                 f"Employment type: {labels[kind]}", ""]  # fmt: skip
        if difficulty >= 3:
            lines += [f"Posted {d.date_text(posted, style)}.", ""]
        lines += ["About the role", *d.filler(rng, 1 + difficulty // 4), "",
                  "Requirements", f"- {need} of relevant experience",
                  *[f"- {s}" for s in required]]  # fmt: skip
        distractors: dict[str, object] = {"salary_min": high}
        if nice:
            lines += ["", "Nice to have", *[f"- {s}" for s in nice]]
            distractors = {"required_skills": [*required[:-1], nice[0]], **distractors}
        lines += ["", f"Salary: {pay}", f"Apply by {d.date_text(deadline, style)} via our careers page."]  # fmt: skip
        gold = {"title": title, "company": firm, "city": place.city, "employment_type": kind,
                "remote": remote, "salary_min": low, "salary_max": high,
                "min_years_experience": years, "required_skills": required,
                "apply_by": d.iso(deadline)}  # fmt: skip
        measure = 9 + len(skills) + (difficulty >= 3) + difficulty // 4
        return Doc("\n".join(lines), gold, measure, distractors)


class Resume(ExtractDomain):
    """A résumé: contact details, the jobs in order with their months, and education."""

    id = "extract/resume-v2"
    kind = "résumé"
    fields = (
        Field("name", "text", "the candidate's full name"),
        Field("email", "email", "the candidate's e-mail address"),
        Field("jobs", "list", "the jobs held", ordered=True, items=(
            Field("company", "text", "the employer"),
            Field("title", "text", "the job title"),
            Field("start", "month", "the first month, as YYYY-MM"),
            Field("end", "month", "the last month as YYYY-MM, or \"present\" for a current job"))),
        Field("degree", "text", "the degree, as written"),
        Field("university", "text", "the university of that degree"),
        Field("graduation_year", "integer", "the year the degree was completed"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        name, referee = d.people(rng, 2)
        firms = d.companies(rng, 2 + difficulty // 3)
        titles = rng.sample(TITLES, len(firms))
        style = rng.choice(
            (("iso", "long"), ("long", "short"), ("short", "slash"))[min(2, (difficulty - 1) // 3)]
        )
        month = 2025 * 12 + rng.randint(0, 11) - rng.choice((0, 0, 5))
        current = month >= 2025 * 12
        jobs: list[dict[str, str]] = []
        for firm, title in zip(firms[:-1], titles, strict=False):
            start = month - rng.randint(10, 50)
            end_text = "present" if not jobs and current else f"{month // 12}-{month % 12 + 1:02d}"
            jobs.append({"company": firm, "title": title,
                         "start": f"{start // 12}-{start % 12 + 1:02d}", "end": end_text})  # fmt: skip
            month = start - rng.randint(1, 6)
        grad = month // 12
        degree, university = rng.choice(DEGREES), rng.choice(UNIVERSITIES)
        host = d.web_domain(d.company(rng)).replace(".com", ".net")
        mail = d.email(name, host)

        def shown(text: str) -> str:
            if text == "present":
                return "Present"
            return d.month_text(int(text[:4]), int(text[5:]), style)

        lines = [name.upper(), f"{d.address(rng).city} · {mail} · {d.phone_text(d.phone(rng), 'dots')}",
                 "", "SUMMARY", rng.choice(d.FILLER), "", "EXPERIENCE"]  # fmt: skip
        for job in jobs:
            span = f"{shown(job['start'])} – {shown(job['end'])}"
            if difficulty >= 5:
                lines.append(f"{job['company']} | {job['title']} | {span}")
            else:
                lines += [f"{job['title']}, {job['company']}", span]
            lines.append(f"- {rng.choice(BULLETS).format(rng.randint(3, 40))}")
        lines += ["", "EDUCATION", f"{degree}, {university}, {grad}"]
        distractors: dict[str, object] = {"graduation_year": grad - 4}
        if difficulty >= 4:
            cert = grad + rng.randint(1, 6)
            lines += [
                "",
                "CERTIFICATIONS",
                f"{rng.choice(SKILLS)} professional certificate ({cert})",
            ]
            distractors = {"graduation_year": cert}
        if difficulty >= 7:
            lines += ["", "REFERENCES", f"{referee}, {titles[-1]} at {firms[-1]}"]
            distractors = {"name": referee, **distractors}
        gold = {"name": name, "email": mail, "jobs": jobs, "degree": degree,
                "university": university, "graduation_year": grad}  # fmt: skip
        measure = 5 + 4 * len(jobs) + (difficulty >= 4) + 3 * (difficulty >= 7)
        return Doc("\n".join(lines), gold, measure, distractors)


DOMAINS = (ContactSignature(), JobPosting(), Resume())
