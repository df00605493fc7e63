"""The `agent/*` family: tool-using agents over simulated services, and function calling.

Multi-turn domains (`episode_tasks.AgentTaskDomain`) put the model in front of a
simulated service (`bank.py`, `orders.py`, `calendar.py`, `tickets.py`) backed by an
in-memory database with injected failures (`db.py`); the verdict compares the final
database with a replay of the gold writes, checks the final `ANSWER:` line and the
written policy. Single-turn domains (`function_calling.py`) ask for the right call,
checked by structure without executing it.

    from posttrain.domains.agents import DOMAINS

Not guaranteed: see each module's docstring.
"""

from __future__ import annotations

from posttrain.domains.agents import bank, calendar, fc_followup, function_calling, orders, tickets
from posttrain.domains.agents.episode_tasks import AgentTaskDomain
from posttrain.domains.answer_domain import AnswerDomain

DOMAINS: tuple[AgentTaskDomain | AnswerDomain, ...] = (
    AgentTaskDomain("agent/bank-transfer-v1", bank.BANK, bank.transfer_task),
    AgentTaskDomain("agent/bank-dispute-v1", bank.BANK, bank.dispute_task),
    AgentTaskDomain("agent/bank-spending-v1", bank.BANK, bank.spending_task, verification="exact"),
    AgentTaskDomain("agent/shop-purchase-v1", orders.SHOP, orders.purchase_task),
    AgentTaskDomain("agent/shop-refund-v1", orders.SHOP, orders.refund_task),
    AgentTaskDomain("agent/calendar-schedule-v1", calendar.CALENDAR, calendar.schedule_task),
    AgentTaskDomain("agent/calendar-move-v1", calendar.CALENDAR, calendar.move_task),
    AgentTaskDomain("agent/tickets-triage-v1", tickets.DESK, tickets.triage_task),
    AgentTaskDomain("agent/tickets-priority-v1", tickets.DESK, tickets.priority_task),
    *function_calling.DOMAINS,
    *fc_followup.DOMAINS,
)

__all__ = ["DOMAINS"]
