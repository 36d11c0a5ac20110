"""`tf.train.SessionRunHook` and what hooks exchange with the loop that runs them; HookedSession
is that loop's one step: a session whose run() calls every hook around it."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
]


class SessionRunHook:
    """Code that runs around each Session.run of a training loop (Estimator.train).

    begin() before the session exists (the graph may still grow), after_create_session() once
    the variables are initialized or restored, before_run()/after_run() around every step,
    end() once the loop stops. Every method does nothing unless a subclass overrides it.
    """

    def begin(self) -> None:
        pass

    def after_create_session(self, session: Any, coord: Any) -> None:
        pass

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        pass

    def end(self, session: Any) -> None:
        pass


class SessionRunArgs(NamedTuple):
    """What a hook adds to the next run: more fetches and feeds."""

    fetches: Any
    feed_dict: Any = None
    options: Any = None


class SessionRunValues(NamedTuple):
    """What a hook gets back: the values of its fetches."""

    results: Any
    options: Any = None
    run_metadata: Any = None


class SessionRunContext:
    """The run a hook is called around: its original arguments, the session, and a way to stop
    the loop after this step."""

    def __init__(self, original_args: SessionRunArgs, session: Any) -> None:
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self) -> SessionRunArgs:
        return self._original_args

    @property
    def session(self) -> Any:
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        self._stop_requested = True


class HookedSession:
    """A session whose run() adds each hook's fetches and feeds, then hands the hook its values.

    `should_stop()` turns true once a hook called request_stop(). The caller owns the session
    and calls the hooks' begin, after_create_session and end.
    """

    def __init__(self, session: Any, hooks: list[SessionRunHook]) -> None:
        self._session = session
        self._hooks = list(hooks)
        self._should_stop = False

    @property
    def session(self) -> Any:
        return self._session

    def should_stop(self) -> bool:
        return self._should_stop

    def run(
        self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None
    ) -> Any:
        """One run with every hook around it. `options` default to a hook's, when one asks."""
        if self._should_stop:
            raise RuntimeError("Run called even after should_stop requested.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._session)
        all_fetches: dict[Any, Any] = {"caller": fetches}
        hook_feeds: dict = {}
        for i, hook in enumerate(self._hooks):
            request = hook.before_run(context)
            if request is None:
                continue
            if request.fetches is not None:
                all_fetches[i] = request.fetches
            if request.feed_dict:
                _check_disjoint(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
                hook_feeds.update(request.feed_dict)
            if options is None and request.options is not None:
                options = request.options
        if hook_feeds and feed_dict:
            _check_disjoint(
                feed_dict, hook_feeds, "Same tensor is fed by a SessionRunHook and user."
            )
        feeds = {**hook_feeds, **(feed_dict or {})} or None
        results = self._session.run(all_fetches, feeds, options=options, run_metadata=run_metadata)
        for i, hook in enumerate(self._hooks):
            hook.after_run(context, SessionRunValues(results.get(i), options, run_metadata))
        self._should_stop = self._should_stop or context.stop_requested
        return results["caller"]


def _check_disjoint(a: dict, b: dict, message: str) -> None:
    both = set(a) & set(b)
    if both:
        raise RuntimeError(f"{message} Conflict(s): {sorted(str(k) for k in both)}")
