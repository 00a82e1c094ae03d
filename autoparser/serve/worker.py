"""The generation worker: one thread per pipeline, one generation at a time, a bounded queue.

Rules:

* ``LLMPipeline.generate`` runs only on this worker's thread, never on the event loop: it holds
  a CPU for seconds. GenAI releases the GIL while it computes, so the loop keeps serving.
* The parser runs on the worker thread too, inside GenAI's streamer callback, so the loop
  receives parsed events (not text) and never does parsing work.
* At most ``1 + max_queue`` jobs are admitted (one generating, the rest waiting in order); the next
  :meth:`Worker.submit` raises a 429 :class:`ApiError` with ``Retry-After``.
* A job's consumer (the HTTP handler) may vanish at any time: :meth:`Job.cancel` makes the
  streamer answer ``StreamingStatus.CANCEL`` at the next token, and a job cancelled while still
  waiting is skipped without generating.
* Nothing the worker does raises into the thread's loop: every outcome, error included, is an
  item posted to the job's asyncio queue with ``call_soon_threadsafe``.

Theory of operation: the handler builds a :class:`Job` (plan + its event loop), submits it, and
awaits ``job.items``: lists of events as they are parsed, then exactly one :class:`Outcome` or
:class:`Failure`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autoparser.events import Event
from autoparser.result import Result
from autoparser.serve.errors import ApiError

if TYPE_CHECKING:
    from autoparser.serve.model import ServedModel
    from autoparser.serve.plan import Plan

__all__ = ["Failure", "Item", "Job", "Outcome", "Worker"]

log = logging.getLogger("autoparser.serve")


@dataclass(frozen=True)
class Outcome:
    """How a generation ended. ``finish`` is GenAI's reason (``stop``, ``length``, ``none`` when
    cancelled); ``hit_limit`` is what decides OpenAI's ``length``."""

    result: Result
    finish: str
    completion_tokens: int
    seconds: float
    first_token_seconds: float | None
    cancelled: bool

    @property
    def hit_limit(self) -> bool:
        return self.finish == "length"


@dataclass(frozen=True)
class Failure:
    """Generation raised (``started``: after tokens were already streamed)."""

    error: BaseException
    started: bool


Item = list[Event] | Outcome | Failure


class Job:
    """One request's generation, seen from both sides (the loop and the worker thread)."""

    def __init__(self, plan: Plan, loop: asyncio.AbstractEventLoop) -> None:
        self.plan = plan
        self.loop = loop
        self.items: asyncio.Queue[Item] = asyncio.Queue()
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop generating at the next token, or never start (thread-safe, idempotent)."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def post(self, item: Item) -> None:
        """Hand ``item`` to the loop (from the worker thread)."""
        try:
            self.loop.call_soon_threadsafe(self.items.put_nowait, item)
        except RuntimeError:  # the loop has closed: nobody is waiting any more
            self.cancel()


class Worker:
    """Runs the jobs of one :class:`~autoparser.serve.model.ServedModel`, one at a time."""

    def __init__(self, model: ServedModel, max_queue: int) -> None:
        self.model = model
        self.max_queue = max_queue
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._lock = threading.Lock()
        self._admitted = 0  # waiting + running
        self._running: Job | None = None
        self._stopping = False
        self._durations: collections.deque[float] = collections.deque(maxlen=16)
        self.counts = {"completed": 0, "cancelled": 0, "failed": 0, "rejected": 0}
        self._thread = threading.Thread(target=self._loop, name="autoparser-serve-worker", daemon=True)

    # -- the loop's side ------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def submit(self, job: Job) -> None:
        """Queue ``job`` or refuse it (503 when stopping, 429 when the queue is full)."""
        with self._lock:
            if self._stopping:
                raise ApiError(503, "the server is shutting down", type="server_error", code="shutting_down")
            if self._admitted >= 1 + self.max_queue:
                self.counts["rejected"] += 1
                wait = self._retry_after()
                raise ApiError(429, f"the server is busy: {self._admitted} requests are generating or waiting; "
                               f"retry in {wait} s", type="requests", code="rate_limit_exceeded",
                               headers={"Retry-After": str(wait)})
            self._admitted += 1
        self._jobs.put(job)

    def _retry_after(self) -> int:
        """Seconds until a slot is likely free: recent mean generation time times the jobs ahead."""
        mean = sum(self._durations) / len(self._durations) if self._durations else 1.0
        return max(1, min(60, round(mean * self._admitted / (1 + self.max_queue))))

    def stats(self) -> dict[str, Any]:
        with self._lock:
            running = self._running is not None
            return {"generating": running, "waiting": self._admitted - running, "max_waiting": self.max_queue,
                    **self.counts}

    def stop(self, timeout: float) -> None:
        """Refuse new jobs, cancel waiting and running ones, and wait up to ``timeout`` s for the thread."""
        with self._lock:
            self._stopping = True
            running = self._running
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.post(Failure(ApiError(503, "the server shut down before this request ran", type="server_error",
                                          code="shutting_down"), started=False))
                self._release(job, "cancelled")
        if running is not None:
            running.cancel()
        self._jobs.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def stopping(self) -> bool:
        return self._stopping

    # -- the worker thread ----------------------------------------------------------------------

    def _release(self, job: Job, outcome: str) -> None:
        with self._lock:
            self._admitted -= 1
            self.counts[outcome] += 1
            if self._running is job:
                self._running = None

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            if job.cancelled:  # its client left while it waited
                job.post(Failure(ApiError(499, "the client went away", code="client_closed"), started=False))
                self._release(job, "cancelled")
                continue
            with self._lock:
                self._running = job
            start = time.perf_counter()
            outcome = "failed"
            try:
                outcome = self._generate(job)
            except BaseException as exc:  # never let one request kill the worker
                log.exception("generation failed")
                job.post(Failure(exc, started=False))
            finally:
                self._durations.append(time.perf_counter() - start)
                self._release(job, outcome)

    def _generate(self, job: Job) -> str:
        """Run one generation, posting events as they are parsed; return the outcome's counter name."""
        from autoparser.live._base import require_openvino
        from autoparser.live.streaming import piece_streamer
        from autoparser.live.structured import build_structured_output

        ov = require_openvino()
        live, plan = self.model.live, job.plan
        parser = plan.parser(self.model.tokens.strings)
        first: list[float] = []
        broken: list[BaseException] = []
        start = time.perf_counter()

        def on_piece(text: str, special: bool) -> Any:
            if job.cancelled or broken:
                return ov.StreamingStatus.CANCEL
            if not first:
                first.append(time.perf_counter() - start)
            try:
                events = parser.feed(text, special)
            except Exception as exc:  # a parser bug must not escape into GenAI's C++ callback
                broken.append(exc)
                return ov.StreamingStatus.CANCEL
            if events:
                job.post(events)
            return ov.StreamingStatus.RUNNING

        try:
            config = ov.GenerationConfig(**plan.options)
            if plan.grammar is not None:
                config.structured_output_config = build_structured_output(plan.grammar)
            streamer = piece_streamer(ov, live.tokenizer, self.model.tokens.decoder(), on_piece)
            with live.lock:
                results = live.pipeline.generate([plan.prompt], config, streamer)
        except Exception as exc:
            log.warning("generation failed: %s", str(exc).strip().splitlines()[0] if str(exc).strip() else exc)
            job.post(Failure(exc, started=bool(first)))
            return "failed"
        if broken:
            job.post(Failure(broken[0], started=True))
            return "failed"
        events = parser.close()
        if events:
            job.post(events)
        reasons = getattr(results, "finish_reasons", None)
        finish = str(reasons[0]).rsplit(".", 1)[-1].lower() if reasons else "stop"
        try:
            tokens = int(results.perf_metrics.get_num_generated_tokens())
        except (AttributeError, RuntimeError):
            tokens = 0
        job.post(Outcome(result=parser.result(), finish=finish, completion_tokens=tokens,
                         seconds=time.perf_counter() - start, first_token_seconds=first[0] if first else None,
                         cancelled=job.cancelled))
        return "cancelled" if job.cancelled else "completed"
