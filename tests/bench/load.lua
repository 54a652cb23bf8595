-- One wrk load for the Countersign benchmarks: requests come from a file the harness writes, one
-- per line as  METHOD <tab> PATH <tab> TOKEN <tab> IF-NONE-MATCH <tab> BODY  (empty fields allowed).
--   wrk -s load.lua URL -- FILE cycle|once [follow-etag]
-- cycle repeats the list; once sends each line at most once and stops the thread when the list is
-- spent (a decision or an invoke must not be replayed); follow-etag sends the ETag of the last
-- answer in If-None-Match, as a polling console does. done() prints one line the harness parses.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local function split(line)
  local fields = {}
  for field in (line .. "\t"):gmatch("([^\t]*)\t") do
    table.insert(fields, field)
  end
  return fields
end

local function build(fields, etag)
  local headers = {}
  if fields[3] ~= "" then headers["Authorization"] = "Bearer " .. fields[3] end
  if etag ~= nil and etag ~= "" then headers["If-None-Match"] = etag end
  local body = nil
  if fields[5] ~= nil and fields[5] ~= "" then
    body = fields[5]
    headers["Content-Type"] = "application/json"
  end
  return wrk.format(fields[1], fields[2], headers, body)
end

function init(args)
  lines = {}
  for line in io.lines(args[1]) do
    if line ~= "" then table.insert(lines, split(line)) end
  end
  once = args[2] == "once"
  follow = args[3] == "follow-etag"
  prepared = {}
  for i, fields in ipairs(lines) do prepared[i] = build(fields, fields[4]) end
  etag = nil
  next_index = 1
  exhausted = 0
  counts = {}
end

function request()
  if next_index > #prepared then
    if once then
      exhausted = 1
      wrk.thread:stop()
      return prepared[#prepared]
    end
    next_index = 1
  end
  local i = next_index
  next_index = next_index + 1
  if follow and etag ~= nil then return build(lines[i], etag) end
  return prepared[i]
end

function response(status, headers, body)
  local key = tostring(status)
  counts[key] = (counts[key] or 0) + 1
  if follow then etag = headers["etag"] or headers["ETag"] or etag end
end

function done(summary, latency, requests)
  local statuses, spent = {}, 0
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("counts") or {}) do
      statuses[status] = (statuses[status] or 0) + n
    end
    spent = math.max(spent, thread:get("exhausted") or 0)
  end
  local parts = {}
  for status, n in pairs(statuses) do table.insert(parts, string.format('"%s":%d', status, n)) end
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"duration_us":%d,"requests":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,"exhausted":%d,' ..
    '"statuses":{%s}}\n',
    summary.duration, summary.requests, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.timeout, spent, table.concat(parts, ",")))
end
