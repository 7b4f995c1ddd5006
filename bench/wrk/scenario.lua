-- One wrk script for every scenario, so each pays the same client-side Lua cost.
--
-- Arguments after `--`, each name=value:
--   expected=<status>        the one status a correct answer has; others are counted
--   method=<METHOD>          default GET
--   path=<path>              default: the path of the URL given to wrk
--   header=<Name: value>     repeatable
--   body=<text>
--   tokens=<prefix>          read tokens from <prefix><thread index>.txt, one per line; every
--                            request appends the next unused one to `path`. When a thread runs
--                            out it sends "exhausted" instead, which pps refuses: the
--                            benchmark then reports it rather than reusing a token.
--
-- done() prints one line "PPS_RESULT {json}" that bench/load.py reads.

local threads = {}
local thread_count = 0

function setup(thread)
  thread:set("id", thread_count)
  thread_count = thread_count + 1
  table.insert(threads, thread)
end

function init(args)
  expected = 200
  local method, path, body = "GET", wrk.path, nil
  local headers = {}
  local prefix = nil
  for _, arg in ipairs(args) do
    local name, value = arg:match("^(%w+)=(.*)$")
    if name == "expected" then expected = tonumber(value)
    elseif name == "method" then method = value
    elseif name == "path" then path = value
    elseif name == "body" then body = value
    elseif name == "header" then
      local key, val = value:match("^([^:]+):%s*(.*)$")
      headers[key] = val
    elseif name == "tokens" then prefix = value
    else error("unknown argument " .. arg)
    end
  end
  ok, unexpected, first_unexpected, exhausted = 0, 0, 0, 0
  tokens, next_token = nil, 1
  if prefix then
    tokens = {}
    for line in io.lines(prefix .. id .. ".txt") do tokens[#tokens + 1] = line end
  end
  req_method, req_path, req_headers, req_body = method, path, headers, body
end

-- Every request is formatted afresh, with or without a token, never prebuilt once: the
-- client does the same work per request in every scenario, hello-world included.
function request()
  local token = ""
  if tokens then
    token = tokens[next_token]
    if token == nil then
      exhausted = exhausted + 1
      token = "exhausted"
    else
      tokens[next_token] = nil
      next_token = next_token + 1
    end
  end
  return wrk.format(req_method, req_path .. token, req_headers, req_body)
end

function response(status, headers, body)
  if status == expected then
    ok = ok + 1
  else
    unexpected = unexpected + 1
    if first_unexpected == 0 then first_unexpected = status end
  end
end

function done(summary, latency, requests)
  local total_ok, total_unexpected, total_exhausted, first = 0, 0, 0, 0
  local expected_status = threads[1]:get("expected")
  for _, thread in ipairs(threads) do
    total_ok = total_ok + thread:get("ok")
    total_unexpected = total_unexpected + thread:get("unexpected")
    total_exhausted = total_exhausted + thread:get("exhausted")
    if first == 0 then first = thread:get("first_unexpected") end
  end
  local e = summary.errors
  io.write(string.format(
    'PPS_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"socket_errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},' ..
    '"non_2xx_3xx":%d,' ..
    '"latency_us":{"mean":%.1f,"stdev":%.1f,"max":%.0f,"p50":%.0f,"p90":%.0f,"p99":%.0f},' ..
    '"expected_status":%d,"ok":%d,"unexpected":%d,"first_unexpected":%d,"exhausted":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.timeout, e.status,
    latency.mean, latency.stdev, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    expected_status, total_ok, total_unexpected, first, total_exhausted))
end
