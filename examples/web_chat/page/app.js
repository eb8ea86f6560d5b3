// The chat page: a sidebar of chats, the conversation with replies and tool calls streaming in,
// and a tools popover with a switch per tool. It talks to the server's small JSON API; a turn's
// events arrive as server-sent events in the answer to the POST that sends the message. A tool
// call that needs the user's approval gets Approve and Deny buttons in its card; once every
// waiting call of the turn is answered, the answers are posted and the turn goes on, its events
// streaming in the same way.
'use strict';

const $ = (id) => document.getElementById(id);

// The chat on screen, and whether a turn is running.
let current = null;
let busy = false;

// An element with attributes and children; `text` sets the text content.
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `${method} ${path}: the server answered ${response.status}`);
  return data;
}

function showWarning(message) {
  $('warning').textContent = message || '';
  $('warning').hidden = !message;
}

// Why the last message was not sent, shown just above the message box, where the user looks.
function showSendError(message) {
  $('send-error').textContent = message || '';
  $('send-error').hidden = !message;
}

// Opens or closes the chat list (on narrow screens it slides in over the conversation).
function showChats(open) {
  document.body.classList.toggle('chats-open', open);
  $('chats-button').setAttribute('aria-expanded', String(open));
  if (open) ($('chat-list').querySelector('[aria-current=page]') || $('new-chat')).focus();
}

// --- chats ---

async function start() {
  $('new-chat').addEventListener('click', () => {
    showChats(false);
    newChat().catch((error) => showWarning(error.message));
  });
  $('chats-button').addEventListener('click', () => showChats(!document.body.classList.contains('chats-open')));
  // A click beside the open list, or Escape, closes it.
  document.querySelector('main').addEventListener('click', (event) => {
    if (!event.target.closest('#chats-button')) showChats(false);
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && document.body.classList.contains('chats-open')) {
      showChats(false);
      $('chats-button').focus();
    }
  });
  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    send();
  });
  $('message').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('tools').addEventListener('toggle', (event) => {
    if (event.newState === 'open') loadTools();
  });

  const state = await api('GET', '/api/state');
  $('offline').hidden = !state.offline;
  $('model').textContent = state.offline ? 'offline test model' : `${state.model} (${state.provider})`;

  const { chats } = await api('GET', '/api/chats');
  const wanted = chats.find((chat) => chat.id === location.hash.slice(1)) || chats[0];
  if (wanted) await openChat(wanted.id, chats);
  else await newChat();
}

async function newChat() {
  const chat = await api('POST', '/api/chats');
  await openChat(chat.id);
  showWarning(chat.warning);
}

async function openChat(id, chats) {
  current = id;
  history.replaceState(null, '', `#${id}`);
  showWarning('');
  showSendError('');
  renderChatList(chats || (await api('GET', '/api/chats')).chats);
  const chat = await api('GET', `/api/chats/${id}`);
  $('chat-title').textContent = chat.title;
  // The results of calls that ran beside those waiting for approval come apart from the
  // conversation, which they join once the waiting calls are answered.
  redraw([...chat.messages, ...chat.pending_results], chat.pending_approvals);
  if ($('tools').matches(':popover-open')) await loadTools();
  $('message').focus();
}

function renderChatList(chats) {
  $('chat-list').replaceChildren(...chats.map((chat) => {
    const button = el('button', { type: 'button', text: chat.title });
    if (chat.id === current) button.setAttribute('aria-current', 'page');
    button.addEventListener('click', () => {
      showChats(false);
      openChat(chat.id).catch((error) => showWarning(error.message));
    });
    return el('li', {}, button);
  }));
}

// --- the conversation ---

// One assistant turn on screen: its text blocks and tool cards, found by call id and by the
// call's index within the current step.
function newTurn() {
  const li = el('li', { class: 'assistant' });
  $('conversation').append(li);
  return { li, text: null, cards: new Map(), byIndex: new Map() };
}

function addText(turn, delta) {
  if (!turn.text) {
    turn.text = el('p', { class: 'text' });
    turn.li.append(turn.text);
  }
  turn.text.textContent += delta;
}

function addCard(turn, id, name) {
  const card = el('article', { class: 'tool-card', 'data-tool': name, 'data-state': 'running', 'aria-label': `Tool call ${name}` },
    el('h3', { text: `⚙ ${name}` }),
    el('pre', { class: 'arguments' }),
    el('pre', { class: 'result', text: '…' }));
  turn.li.append(card);
  turn.cards.set(id, card);
  // Text after a tool call goes below it.
  turn.text = null;
  return card;
}

// A tool search, as a card of its own: what the model looked for and what it loaded.
function addSearchCard(turn, data) {
  const found = data.loaded.length ? `loaded ${data.loaded.join(', ')}` :
    data.matches.length ? `found ${data.matches.join(', ')} (already loaded)` : 'no tool found';
  turn.li.append(el('article', { class: 'search-card', 'aria-label': `Tool search ${data.query}` },
    el('h3', { text: `🔍 ${data.query}` }),
    el('p', { class: 'search-result', text: found })));
  turn.text = null;
}

// `kind` is how the call went, when the event says (`denied`, `error`, ...).
function finishCard(card, content, isError, kind) {
  card.dataset.state = kind === 'denied' ? 'denied' : isError ? 'error' : 'ok';
  card.querySelector('.result').textContent = `${isError ? '✗' : '→'} ${content}`;
  card.querySelector('.approval')?.remove();
}

// --- approvals ---

// Asks the user about a call waiting for approval, inside its card: the call's name and
// arguments, Approve and Deny, and an optional reason the model is told on a denial. The turn's
// `waiting` map collects the answers; the last one posts them all.
function askApproval(turn, request) {
  const card = turn.cards.get(request.id) || addCard(turn, request.id, request.name);
  card.querySelector('.arguments').textContent = request.arguments;
  card.dataset.state = 'waiting';
  card.querySelector('.result').textContent = '… waiting for your approval';
  card.querySelector('.approval')?.remove();
  turn.waiting = turn.waiting || new Map();
  turn.waiting.set(request.id, null);

  const key = `approval-${request.id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const reason = el('input', { type: 'text', id: `${key}-reason`, class: 'reason', autocomplete: 'off' });
  const approve = el('button', { type: 'button', class: 'approve', 'aria-label': `Approve ${request.name}`, text: 'Approve' });
  const deny = el('button', { type: 'button', class: 'deny', 'aria-label': `Deny ${request.name}`, text: 'Deny' });
  const box = el('div', { class: 'approval', role: 'group', 'aria-labelledby': `${key}-question` },
    el('p', { id: `${key}-question`, class: 'question', text: `Allow ${request.name} to run with these arguments?` }),
    el('pre', { class: 'approval-arguments', text: request.arguments }),
    el('label', { for: `${key}-reason`, text: 'Reason for a denial (optional, told to the model)' }),
    reason,
    el('div', { class: 'approval-buttons' }, approve, deny));
  card.append(box);

  const decide = (decision) => {
    approve.disabled = true;
    deny.disabled = true;
    reason.disabled = true;
    const text = reason.value.trim();
    const answer = decision === 'deny' && text ? { id: request.id, decision, reason: text } : { id: request.id, decision };
    turn.waiting.set(request.id, answer);
    box.dataset.decision = decision;
    card.querySelector('.result').textContent = decision === 'approve' ? '… approved' : '… denied';
    // The buttons just pressed are disabled, so focus moves on for keyboard users: to the next
    // question, or back to the message box once all are answered.
    const next = turn.li.querySelector('.approval:not([data-decision]) button.approve');
    if (next) next.focus();
    if ([...turn.waiting.values()].every(Boolean)) answerApprovals(turn);
  };
  approve.addEventListener('click', () => decide('approve'));
  deny.addEventListener('click', () => decide('deny'));
}

// Posts the answers of every waiting call of `turn`, and streams the rest of the turn into it.
async function answerApprovals(turn) {
  const decisions = [...turn.waiting.values()];
  turn.waiting = null;
  const chatId = current;
  busy = true;
  $('send').disabled = true;
  turn.li.dataset.done = 'false';
  // The line saying calls wait is answered now.
  for (const line of turn.li.querySelectorAll('.status.waiting')) line.remove();
  try {
    const response = await fetch(`/api/chats/${chatId}/approvals`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ decisions }),
    });
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      throw new Error(data.error || `the server answered ${response.status}`);
    }
    const ended = await readEvents(response, (name, data) => handle(turn, name, data));
    if (!ended) showError(turn, 'the connection dropped before the reply was finished');
  } catch (error) {
    showError(turn, `the answer could not be sent: ${error.message}`);
  } finally {
    turn.li.dataset.done = 'true';
    busy = false;
    $('send').disabled = false;
    $('message').focus();
  }
}

function showError(turn, message) {
  turn.li.append(el('p', { class: 'error', role: 'alert', text: message }));
  scrollDown();
}

// Redraws a saved conversation: user messages, assistant text, tool calls and their results,
// and the questions about calls still waiting for approval.
function redraw(messages, pending = []) {
  $('conversation').replaceChildren();
  let turn = null;
  for (const message of messages) {
    if (message.role === 'user') {
      $('conversation').append(el('li', { class: 'user', text: message.content }));
      turn = null;
      continue;
    }
    turn = turn || newTurn();
    if (message.role === 'assistant') {
      if (message.content) addText(turn, message.content);
      for (const call of message.tool_calls || []) {
        addCard(turn, call.id, call.name).querySelector('.arguments').textContent = call.arguments;
      }
    } else if (message.role === 'tool') {
      const card = turn.cards.get(message.tool_call_id) || addCard(turn, message.tool_call_id, message.name);
      finishCard(card, message.content, message.is_error, message.kind);
    }
  }
  // Saved turns are finished ones, or wait for the answers asked again here.
  for (const li of $('conversation').querySelectorAll('li.assistant')) li.dataset.done = 'true';
  for (const request of pending) askApproval(turn || newTurn(), request);
  scrollDown();
  showQuestion();
}

// Brings the first unanswered approval question into view: a turn that stops for approval
// usually has results below it that would push it out of sight.
function showQuestion() {
  const question = $('conversation').querySelector('.approval:not([data-decision])');
  if (question) question.scrollIntoView({ block: 'center' });
}

// Keeps the newest part of the conversation in view.
function scrollDown() {
  $('conversation').scrollTop = $('conversation').scrollHeight;
}

// Applies one event of a running turn.
function handle(turn, name, data) {
  switch (name) {
    case 'text':
      addText(turn, data.delta);
      break;
    case 'tool_call_started':
      turn.byIndex.set(data.index, addCard(turn, data.id, data.name));
      break;
    case 'tool_call_delta': {
      const card = turn.byIndex.get(data.index);
      if (card) card.querySelector('.arguments').textContent += data.arguments;
      break;
    }
    case 'tool_call_finished': {
      const card = turn.cards.get(data.id) || addCard(turn, data.id, data.name);
      card.querySelector('.arguments').textContent = data.arguments;
      break;
    }
    case 'tool_result':
      finishCard(turn.cards.get(data.id) || addCard(turn, data.id, data.name), data.content, data.is_error, data.kind);
      break;
    case 'approval_requested':
      askApproval(turn, data);
      break;
    case 'tool_search':
      addSearchCard(turn, data);
      break;
    case 'step_finished':
      turn.byIndex.clear();
      break;
    case 'done': {
      turn.li.dataset.done = 'true';
      const waiting = data.pending_approvals.length;
      const status = `${data.steps} step(s), ${data.tool_calls} tool call(s)` +
        (waiting ? `; ${waiting} call(s) wait for your approval` : '');
      turn.li.append(el('p', { class: waiting ? 'status waiting' : 'status', text: status }));
      scrollDown();
      showQuestion();
      return;
    }
    case 'error':
      showError(turn, data.message);
      break;
    default:
      break;
  }
  scrollDown();
}

// Reads a response of server-sent events, calling `onEvent(name, data)` for each. Returns
// whether the turn came to an end (`done` or `error`) before the stream closed.
async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let ended = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return ended;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) name = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      // Keep-alive comments carry no data.
      if (data.length === 0) continue;
      onEvent(name, JSON.parse(data.join('\n')));
      if (name === 'done' || name === 'error') ended = true;
    }
  }
}

// Sends the message in the box. Until the server takes it, the text stays in the box: a
// refusal (calls wait for approval) or an unreachable server is said just above it, and the
// user can send it again.
async function send() {
  const typed = $('message').value;
  const text = typed.trim();
  if (!text || busy || !current) return;
  busy = true;
  $('send').disabled = true;
  showSendError('');
  const chatId = current;
  let turn = null;
  try {
    let response;
    try {
      response = await fetch(`/api/chats/${chatId}/messages`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ text }),
      });
    } catch {
      showSendError('the server could not be reached, so the message was not sent; it is still in the box');
      return;
    }
    if (!response.ok) {
      const data = await response.json().catch(() => ({}));
      showSendError(`the message was not sent: ${data.error || `the server answered ${response.status}`}`);
      return;
    }
    // Taken: the message joins the conversation and leaves the box (unless the user has typed
    // something else meanwhile).
    if ($('message').value === typed) $('message').value = '';
    $('conversation').append(el('li', { class: 'user', text }));
    turn = newTurn();
    scrollDown();
    const ended = await readEvents(response, (name, data) => handle(turn, name, data));
    if (!ended) showError(turn, 'the connection dropped before the reply was finished');
  } catch (error) {
    if (turn) showError(turn, `the reply could not be read: ${error.message}`);
    else showSendError(`the message was not sent: ${error.message}`);
  } finally {
    busy = false;
    $('send').disabled = false;
  }
  // The first message names the chat.
  if (turn && chatId === current) {
    try {
      const { chats } = await api('GET', '/api/chats');
      renderChatList(chats);
      const chat = chats.find((item) => item.id === chatId);
      if (chat) $('chat-title').textContent = chat.title;
    } catch (error) {
      showWarning(`the chat list could not be refreshed: ${error.message}`);
    }
  }
}

// --- the tools popover ---

async function loadTools() {
  try {
    const { tools } = await api('GET', `/api/chats/${current}/tools`);
    $('tool-list').replaceChildren(...tools.map(toolRow));
  } catch (error) {
    showWarning(error.message);
  }
}

function toolRow(tool) {
  const id = `tool-${tool.name}`;
  const toggle = el('input', { type: 'checkbox', role: 'switch', id, 'aria-describedby': `${id}-description` });
  toggle.checked = tool.enabled;
  toggle.addEventListener('change', () => setTool(tool.name, toggle));
  // A deferred tool is offered once a search loads it.
  const offered = tool.deferred ? el('span', { class: 'tool-deferred', text: tool.loaded ? 'loaded' : 'deferred' }) : '';
  const details = el('div', {},
    el('label', { for: id, class: 'tool-name', text: tool.title || tool.name }),
    el('span', { class: 'tool-category', text: tool.category || 'general' }),
    offered,
    el('p', { class: 'tool-description', id: `${id}-description`, text: tool.description }));
  return el('li', {}, toolIcon(tool), details, toggle);
}

// The icon of tools that have none: a page with lines.
const DEFAULT_ICON = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E" +
  "%3Cpath d='M3 1.5h7l3 3v10H3z M5.5 7h5M5.5 10h5' fill='none' stroke='%23345' stroke-width='1.3'/%3E%3C/svg%3E";

// An icon URL is shown as an image; anything else (an emoji) as text. Icons are decoration: the
// label names the tool.
function toolIcon(tool) {
  const icon = tool.icon || DEFAULT_ICON;
  if (/^(data:image\/|https?:\/\/|\/)/.test(icon)) {
    return el('img', { class: 'tool-icon', src: icon, alt: '' });
  }
  return el('span', { class: 'tool-icon', 'aria-hidden': 'true', text: icon });
}

async function setTool(name, toggle) {
  // `pending` tells tests (and styles) that the server has not answered yet.
  toggle.dataset.pending = 'true';
  try {
    const result = await api('PUT', `/api/chats/${current}/tools/${encodeURIComponent(name)}`, { enabled: toggle.checked });
    toggle.checked = result.enabled;
    showWarning(result.warning);
  } catch (error) {
    toggle.checked = !toggle.checked;
    showWarning(error.message);
  } finally {
    delete toggle.dataset.pending;
  }
}

start().catch((error) => showWarning(`the page could not start: ${error.message}`));
