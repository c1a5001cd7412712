// servicebus-peer.js plays Azure Service Bus for a message sender, over
// plain AMQP 1.0 on loopback (what a client in development-emulator mode
// speaks: no TLS, SASL ANONYMOUS).
//
//   node servicebus-peer.js --port 0 [--refuse-tokens] [--missing q1,q2]
//
// It listens on 127.0.0.1 at the given port (0 picks a free one) and
//   - answers each $cbs put-token request with status-code 202, or 401 with
//     --refuse-tokens;
//   - attaches every link the client asks for (the entity, its $management
//     pair, the $cbs pair), mirroring source, target and settle modes and
//     offering a max-message-size, except a link to an entity named in
//     --missing, which it refuses with amqp:not-found;
//   - answers $management requests with status-code 501 (none is needed to
//     send a message);
//   - grants credit and accepts every message sent to an entity.
//
// It writes one JSON object per line on standard output, told apart by
// "event": listening {port}, connection {connection, hostname},
// disconnected {connection}, token {connection, audience, token_type,
// status}, and message {connection, entity, body_type, body, properties,
// header fields, message_annotations, application_properties}.
'use strict';

const rhea = require('rhea');

const options = { port: 0, refuseTokens: false, missing: new Set() };
for (let i = 2; i < process.argv.length; i++) {
  switch (process.argv[i]) {
    case '--port': options.port = Number(process.argv[++i]); break;
    case '--refuse-tokens': options.refuseTokens = true; break;
    case '--missing': options.missing = new Set(process.argv[++i].split(',').filter(Boolean)); break;
    default: throw new Error('unknown argument ' + process.argv[i]);
  }
}

// Buffers (binary message ids, data sections) are written as text.
function emit(event) {
  process.stdout.write(JSON.stringify(event, (key, value) =>
    value && value.type === 'Buffer' && Array.isArray(value.data) ? Buffer.from(value.data).toString('utf8') : value) + '\n');
}

const container = rhea.create_container({ id: 'servicebus-peer' });
let connections = 0;

container.on('connection_open', (context) => {
  context.connection.number = ++connections;
  emit({ event: 'connection', connection: connections, hostname: context.connection.remote.open.hostname });
});
// A connection ends with a close frame or, abruptly, with its socket.
function closed(context) {
  const connection = context.connection;
  if (connection.number && !connection.reported) {
    connection.reported = true;
    emit({ event: 'disconnected', connection: connection.number });
  }
}
container.on('connection_close', closed);
container.on('disconnected', closed);
// An error no handler took (a client detaching a link with an error, say)
// is reported and the peer goes on.
container.on('error', (err) => process.stderr.write(`servicebus-peer: ${err.message}\n`));

container.on('receiver_open', (context) => attach(context.receiver));
container.on('sender_open', (context) => attach(context.sender));

// attach answers the client's attach. The entity a link serves is the
// client's target (the client sends) or source (the client receives).
function attach(link) {
  const remote = link.remote.attach;
  const entity = ((link.is_receiver() ? remote.target : remote.source) || {}).address || '';
  if (options.missing.has(entity.replace(/\/\$management$/, ''))) {
    link.close({ condition: 'amqp:not-found', description: `The messaging entity '${entity}' could not be found.` });
    return;
  }
  if (remote.source) link.set_source(remote.source);
  if (remote.target) link.set_target(remote.target);
  link.local.attach.snd_settle_mode = remote.snd_settle_mode;
  link.local.attach.rcv_settle_mode = remote.rcv_settle_mode;
  link.local.attach.max_message_size = 1024 * 1024;
}

container.on('message', (context) => {
  const entity = context.receiver.target.address;
  const message = context.message;
  if (entity === '$cbs') {
    const status = options.refuseTokens ? 401 : 202;
    const props = message.application_properties || {};
    emit({ event: 'token', connection: context.connection.number, audience: props.name, token_type: props.type, status });
    reply(context, message, status, options.refuseTokens ? 'The token was refused.' : 'Accepted');
  } else if (entity.endsWith('/$management')) {
    reply(context, message, 501, 'This peer implements no management operations.');
  } else {
    emit(describe(context.connection.number, entity, message));
  }
});

// reply answers a request on the link whose target is the request's reply-to.
function reply(context, request, status, description) {
  const link = context.connection.find_sender((s) => s.target && s.target.address === request.reply_to);
  if (!link) {
    emit({ event: 'error', error: `no link to reply-to ${request.reply_to}` });
    return;
  }
  link.send({
    correlation_id: request.message_id,
    application_properties: { 'status-code': rhea.types.wrap_int(status), 'status-description': description },
  });
}

function describe(connection, entity, m) {
  const [bodyType, body] = bodyText(m.body);
  const event = { event: 'message', connection, entity, body_type: bodyType, body };
  for (const field of ['message_id', 'correlation_id', 'content_type', 'subject', 'reply_to', 'reply_to_group_id',
    'group_id', 'to', 'absolute_expiry_time', 'creation_time', 'ttl', 'durable']) {
    if (m[field] !== undefined && m[field] !== null) event[field] = m[field];
  }
  event.message_annotations = m.message_annotations || {};
  event.application_properties = m.application_properties || {};
  return event;
}

// bodyText returns the kind of body section and the body as text: data
// sections are decoded as UTF-8 and concatenated, an AMQP value is written
// as itself when it is a string and as JSON otherwise.
function bodyText(body) {
  if (body === undefined || body === null) return ['none', ''];
  if (body.typecode === 0x75) {
    const parts = body.multiple ? body.content : [body.content];
    return ['data', Buffer.concat(parts).toString('utf8')];
  }
  if (body.typecode === 0x76) return ['sequence', JSON.stringify(body.content)];
  if (Buffer.isBuffer(body)) return ['value', body.toString('utf8')];
  return ['value', typeof body === 'string' ? body : JSON.stringify(body)];
}

const server = container.listen({ host: '127.0.0.1', port: options.port });
server.on('listening', () => emit({ event: 'listening', port: server.address().port }));
server.on('error', (err) => {
  process.stderr.write(`servicebus-peer: ${err.message}\n`);
  process.exit(1);
});
