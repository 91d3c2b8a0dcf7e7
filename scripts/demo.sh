#!/usr/bin/env bash
# The quick-start demo: start the bundled example agent on 127.0.0.1, run the example suites against
# it, print the results, stop the agent. Every run lands in one store at the repository root
# (examples/proctor.yaml says so). Each command echoed is the one run, word for word. Exits 0 when Proctor
# ran (the example suites include cases that fail on purpose); non-zero only when Proctor could not run.
set -uo pipefail
cd "$(dirname "$0")/.."
PORT="${DEMO_PORT:-8765}"
URL="http://127.0.0.1:${PORT}"

if python -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $PORT)) != 0)"; then
  echo "demo: port $PORT is already in use; stop what listens there (the examples expect the agent on $URL)" >&2
  exit 2
fi

python -m proctor.demo serve --host 127.0.0.1 --port "$PORT" &
AGENT=$!
trap 'kill $AGENT 2>/dev/null; wait $AGENT 2>/dev/null' EXIT

for _ in $(seq 1 100); do
  python -c "import httpx,sys; sys.exit(httpx.get('$URL/health').status_code != 200)" 2>/dev/null && break
  if ! kill -0 $AGENT 2>/dev/null; then echo "demo: the example agent did not start" >&2; exit 2; fi
  sleep 0.1
done

status=0  # exit 1 (a case failed) and 5 (a case errored) mean Proctor ran; so does 4 for simulated users
MODEL=hr-assistant

# show the command, then run it: what is printed is what runs
run() {
  echo "        $*"
  "$@"
}
echo
echo "== 1/8  Suites with their own targets (openai, http, lobu, python):"
run proctor run examples/suites --model "$MODEL"
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 2/8  A Lobu eval file as it is, over the Lobu gateway protocol:"
run proctor run examples/lobu --gateway "$URL" --agent hr-assistant --model "$MODEL"
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 3/8  watsonx ground-truth datasets as they are (tool-call trajectories), over the OpenAI API:"
run proctor run examples/watsonx --target "$URL/v1" --model "$MODEL" --trials 1
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 4/8  State assertions: Cypher on the graph the agent wrote (embedded FalkorDB) and its object context:"
run proctor run examples/state --model "$MODEL"
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 5/8  Simulated users: an Embabel job over Embabel's protocol, and a watsonx story. Without a model"
echo "        to play the user they are reported 'skipped' with the one option that configures one"
echo "        (add --simulator provider/model):"
run proctor run examples/embabel --target "embabel:$URL" --model "$MODEL"
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || [ $code -eq 4 ] || status=$code
run proctor run examples/simulated --target "$URL/v1" --model "$MODEL"
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || [ $code -eq 4 ] || status=$code

echo
echo "== 6/8  Tools under Proctor's control: the agent takes its tools over MCP from Proctor's tool server,"
echo "        mocked, recorded from the real tools (a stdio MCP server) and replayed from the cassette:"
run proctor run examples/tools --model "$MODEL"
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 7/8  The same agent over the A2A protocol (the demo serves it under /a2a): the example suites"
run proctor run examples/suites --target "a2a:$URL/a2a" --model "$MODEL"
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 8/8  A matrix: one suite against two targets (the HTTP API, the agent in process), one comparison:"
run proctor run examples/suites/emails.yaml --target "$URL/v1" --target python:proctor.demo:respond --model "$MODEL" --quiet
code=$?
[ $code -le 1 ] || status=$code

echo
if [ $status -eq 0 ]; then
  echo "demo: Proctor ran. 'deliberate-failure', 'hr_agent_timeoff_wrong_year' and 'claims-without-doing'"
  echo "      fail on purpose. Results files are in examples/*/.results/; every run is in one store,"
  echo "      .proctor/history.db at the repository root."
  echo
  echo "Try next (proctor is installed in .venv):"
  echo "  source .venv/bin/activate"
  echo "  proctor view          # every demo run in one place, in your browser"
  echo "  (also: proctor runs, proctor report)"
fi
exit $status
