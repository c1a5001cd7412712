package timer

import "strconv"

// luaLib is prepended to every partition script. Those scripts all take the
// same KEYS, the five keys of one partition:
//
//	KEYS[1] <prefix>:{pNN}:due       ZSET entry id -> due (unix ms)
//	KEYS[2] <prefix>:{pNN}:inflight  ZSET entry id -> lease expiry (unix ms)
//	KEYS[3] <prefix>:{pNN}:state     HASH entry id -> packed entry
//	KEYS[4] <prefix>:{pNN}:slots     HASH job id -> "slot|slot|"
//	KEYS[5] <prefix>:{pNN}:status    HASH job id -> packed status (status.go)
//
// A score read back (claimScript) goes through tonumber() and is formatted
// with %.0f: miniredis writes scores in Lua as "1.7e+12", Redis as digits.
var luaLib = "local JOB_ID_LEN = " + strconv.Itoa(jobIDLen) + "\n" + `
-- parse splits a packed entry into its claim token, its due time (unix ms;
-- empty while pending) and the rest; it returns nil for anything else.
local function parse(v)
  return string.match(v, '^([^|]*)|(-?%d*)|(.*)$')
end

-- split returns the job id and the slot of an entry id.
local function split(id)
  return string.sub(id, 1, JOB_ID_LEN), string.sub(id, JOB_ID_LEN + 1)
end

-- add_slot records a non-empty slot of entry id in its job's slot list.
local function add_slot(id)
  local job, slot = split(id)
  if slot == '' then return end
  local list = redis.call('HGET', KEYS[4], job) or ''
  if not string.find('|' .. list, '|' .. slot .. '|', 1, true) then
    redis.call('HSET', KEYS[4], job, list .. slot .. '|')
  end
end

-- remove_slot takes the slot of entry id out of its job's slot list, and
-- deletes the list when it becomes empty.
local function remove_slot(id)
  local job, slot = split(id)
  if slot == '' then return end
  local list = redis.call('HGET', KEYS[4], job)
  if not list then return end
  local kept = ''
  for s in string.gmatch(list, '([^|]*)|') do
    if s ~= slot then kept = kept .. s .. '|' end
  end
  if kept == '' then
    redis.call('HDEL', KEYS[4], job)
  else
    redis.call('HSET', KEYS[4], job, kept)
  end
end

-- put stores entry id as pending at due with the packed value v, replacing
-- whatever was there, claimed or not.
local function put(id, due, v)
  redis.call('HSET', KEYS[3], id, v)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZADD', KEYS[1], due, id)
  add_slot(id)
end

-- pending returns the packed entry of a pending entry: no token, no due
-- time (the due set's score holds it).
local function pending(rest)
  return '||' .. rest
end

-- drop deletes entry id, pending or in flight, but not its slot; it returns
-- 1 when the entry existed.
local function drop(id)
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  return redis.call('HDEL', KEYS[3], id)
end

-- status_fields splits a packed status into its ten fields:
-- occurrence, occurrence time, executions, failures, faulted, last
-- execution, recent attempts, last status, last status time, consecutive
-- faults. A status of the first seven only (stored before the last status
-- was kept) gets no last status, one of nine no consecutive faults; an
-- absent or unreadable one is all zero.
local function status_fields(v)
  local f = {}
  if v then
    for field in string.gmatch(v .. '|', '([^|]*)|') do f[#f + 1] = field end
  end
  if #f == 7 then f[8], f[9] = '', '0' end
  if #f == 9 then f[10] = '0' end
  if #f ~= 10 then return {'0', '0', '0', '0', '0', '0', '', '', '0', '0'} end
  return f
end

-- advanced returns packed status v advanced to occurrence occ, due at ms,
-- or nil when it had reached a later one: a later due time, as a schedule
-- started again numbers its occurrences from 1.
local function advanced(v, occ, ms)
  local f = status_fields(v)
  if tonumber(ms) <= tonumber(f[2]) then return nil end
  f[1], f[2] = occ, ms
  return table.concat(f, '|')
end

-- claim_of returns the due time and the rest of packed entry v (false or
-- nil when absent) when it carries the non-empty claim token, else nil.
local function claim_of(v, token)
  if token == '' or not v then return nil end
  local t, due, rest = parse(v)
  if t ~= token or due == '' then return nil end
  return due, rest
end

-- claimed is claim_of for the stored entry id.
local function claimed(id, token)
  if token == '' then return nil end
  return claim_of(redis.call('HGET', KEYS[3], id), token)
end
`
