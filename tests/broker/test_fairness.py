"""Fairness across tenants: tenant A queues 2,000 jobs at once, then tenant B
submits 20; B's jobs are served alternately with A's and finish long before A's backlog
drains. Asserted on positions in the completion order, never on durations."""
import spwire as w
from conftest import wait_executors


def test_small_tenant_overtakes_a_flooding_tenants_backlog(ctx, make_broker, make_stub):
    broker = make_broker("--heartbeat-ms", "200")
    # two slots, each job held 2 ms: the backlog takes seconds to drain, B's 20 do not
    make_stub(broker, "slow-1", slots=2, delay_us=2000)
    wait_executors(broker, 1)
    client = w.Client(ctx, broker.clients)
    a_ids = [w.job_id() for _ in range(2000)]
    for jid in a_ids:
        client.submit(jid, "A")

    completions = []  # job ids in the order their final answers arrived
    accepted = 0
    while accepted < 2000:  # every A job is queued before B shows up
        msg = client.recv(5000)
        assert msg is not None, "broker stopped answering"
        if msg[1] == w.ACCEPTED:
            accepted += 1
        elif msg[1] in (w.RESULT, w.REJECT):
            assert msg[1] == w.RESULT
            completions.append(msg[3])
    done_before_b = len(completions)

    b_ids = [w.job_id() for _ in range(20)]
    for jid in b_ids:
        client.submit(jid, "B")
    order, answers = w.collect_finals(client, 2020 - done_before_b, timeout_s=120)
    completions += order
    assert len(completions) == 2020 and len(set(completions)) == 2020

    pos = {jid: i for i, jid in enumerate(completions)}
    b_positions = sorted(pos[j] for j in b_ids)
    a_done_when_b_finished = sum(1 for j in a_ids if pos[j] < b_positions[-1])
    # Once B is in, DRR alternates A and B: B's 20 are through within 2 x 20 completions
    # (plus the two slots already busy) of its first...
    assert b_positions[-1] - b_positions[0] <= 2 * 19 + 2 + 2, b_positions
    # ...and B did not wait behind the backlog: when its last job finished, almost all of
    # A's 2,000 were still to come
    assert 2000 - a_done_when_b_finished >= 1800, (done_before_b, a_done_when_b_finished)
    # and each tenant's own jobs complete in the order it submitted them
    assert [j for j in completions if j in set(b_ids)] == b_ids
    a_order = [j for j in completions if j in set(a_ids)]
    assert a_order == a_ids
    for jid in b_ids + a_ids:
        assert len(answers.get(jid, [])) <= 1
    client.close()
