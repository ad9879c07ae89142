// The review queue's pages (serve --review). On /review a chosen file is read into the
// text box. On a job's page the status follows the job's SSE stream; once the review is
// made the page opens it, and a failure shows its message.
'use strict';
(function () {
  const file = document.getElementById('review-file');
  const text = document.getElementById('review-patch');
  if (file && text) {
    file.addEventListener('change', function () {
      const f = file.files[0];
      const note = document.getElementById('review-file-note');
      if (!f) return;
      if (f.size > Number(file.dataset.max)) {
        note.textContent = f.name + ' is larger than ' + file.dataset.max + ' bytes.';
        return;
      }
      f.text().then(function (t) {
        text.value = t;
        note.textContent = f.name + ' read.';
      });
    });
  }
  const job = document.getElementById('review-job');
  if (!job || !window.EventSource) return;
  const line = document.getElementById('job-state');
  const bar = document.getElementById('job-bar');
  const message = document.getElementById('job-message');
  function words(s) {
    switch (s.state) {
      case 'queued':
        if (s.ahead === 0) return 'Queued: yours is next.';
        return 'Queued: ' + s.ahead + (s.ahead === 1 ? ' review' : ' reviews') + ' ahead of yours.';
      case 'running':
        if (s.done !== null && s.of !== null) return 'Running: ' + s.step + ', ' + s.done + ' of ' + s.of + '.';
        return 'Running: ' + s.step + '.';
      case 'done':
        return 'Done: review ' + s.review + '.';
      default:
        return 'The review failed:';
    }
  }
  const events = new EventSource('/review/job/' + job.dataset.id + '/events');
  events.addEventListener('status', function (e) {
    const s = JSON.parse(e.data);
    line.textContent = words(s);
    const counted = s.state === 'running' && s.done !== null && s.of !== null;
    bar.hidden = !counted;
    if (counted) {
      bar.max = s.of;
      bar.value = s.done;
    }
    if (s.state === 'failed') {
      message.textContent = s.message;
      message.hidden = false;
      document.getElementById('job-follow').textContent =
        'Nothing was reviewed; the queue went on with the other patches.';
    }
    if (s.state === 'done' || s.state === 'failed') events.close();
    if (s.state === 'done') window.location.assign('/r/' + s.review);
  });
})();
