#!/usr/bin/env bash
# The quick-start demo: start the bundled example agent on 127.0.0.1, run the example suites against
# it, print the results, stop the agent. Exits 0 when Proctor ran (the example suites include one case
# that fails on purpose); non-zero only when Proctor could not run.
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
echo
echo "== 1/5  Suites with their own targets (openai, http, lobu, python): proctor run examples/suites"
proctor run examples/suites --model hr-assistant
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 2/5  A Lobu eval file as it is, over the Lobu gateway protocol:"
echo "        proctor run examples/lobu --gateway $URL --agent hr-assistant"
proctor run examples/lobu --gateway "$URL" --agent hr-assistant --model hr-assistant
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 3/5  watsonx ground-truth datasets as they are (tool-call trajectories), over the OpenAI API:"
echo "        proctor run examples/watsonx --target $URL/v1 --model hr-assistant"
proctor run examples/watsonx --target "$URL/v1" --model hr-assistant --trials 1
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 4/5  State assertions: Cypher on the graph the agent wrote (embedded FalkorDB) and its object context:"
echo "        proctor run examples/state"
proctor run examples/state --model hr-assistant
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || status=$code

echo
echo "== 5/5  Simulated users: an Embabel job over Embabel's protocol, and a watsonx story. Without a model"
echo "        to play the user they are reported 'skipped' with the one option that configures one:"
echo "        proctor run examples/embabel --target embabel:$URL   (add --simulator provider/model)"
proctor run examples/embabel --target "embabel:$URL" --model hr-assistant
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || [ $code -eq 4 ] || status=$code
proctor run examples/simulated --target "$URL/v1" --model hr-assistant
code=$?
[ $code -le 1 ] || [ $code -eq 5 ] || [ $code -eq 4 ] || status=$code

echo
echo "== Matrix: one suite against two targets (the HTTP API, the agent in process), one comparison:"
echo "        proctor run examples/suites/emails.yaml --target $URL/v1 --target python:proctor.demo:respond"
proctor run examples/suites/emails.yaml --target "$URL/v1" --target python:proctor.demo:respond --model hr-assistant --quiet
code=$?
[ $code -le 1 ] || status=$code

echo
if [ $status -eq 0 ]; then
  echo "demo: Proctor ran. 'deliberate-failure', 'hr_agent_timeoff_wrong_year' and 'claims-without-doing'"
  echo "      fail on purpose;"
  echo "      results are in examples/*/.results/."
fi
exit $status
