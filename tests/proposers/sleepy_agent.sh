#!/bin/sh
# A cmd: agent that never answers: it writes its pid where $SLEEPY_AGENT_PID says, starts a child of
# its own, and waits. The SIGINT test checks that interrupting opbench search ends both.
echo $$ > "$SLEEPY_AGENT_PID"
sleep 300 &
echo $! > "$SLEEPY_AGENT_PID.child"
wait
