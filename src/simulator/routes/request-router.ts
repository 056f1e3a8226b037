/**
 * Method + path pattern → handler, for the simulator's API and admin routes alike. The router only
 * matches: what a miss answers (404, 405, and their wording) is the caller's, because the service
 * and the admin API word them differently.
 */

/** A route: a path pattern and a handler per HTTP method. */
export interface Route<THandler> {
  /** Segments separated by "/"; `:name` matches one non-empty segment, e.g. `Call/:call_uuid/Stream`. */
  readonly pattern: string;
  readonly methods: Readonly<Partial<Record<string, THandler>>>;
}

/** What the router found for a method and a path. */
export type RouteMatch<THandler> =
  | {
      readonly kind: 'found';
      /** The pattern with `{name}` for parameters, e.g. `Call/{call_uuid}/Stream`. */
      readonly route: string;
      readonly handler: THandler;
      /** Path parameters, in order. */
      readonly params: string[];
    }
  | { readonly kind: 'wrong-method'; readonly route: string; readonly allowed: string[] }
  | { readonly kind: 'no-route' };

interface CompiledRoute<THandler> {
  readonly segments: readonly string[];
  readonly name: string;
  readonly methods: Readonly<Partial<Record<string, THandler>>>;
}

/** Matches path segments against routes, first match wins. */
export class RequestRouter<THandler> {
  private readonly routes: readonly CompiledRoute<THandler>[];

  constructor(routes: readonly Route<THandler>[]) {
    this.routes = routes.map((route) => {
      const segments = route.pattern.split('/');
      return {
        segments,
        name: segments.map((s) => (s.startsWith(':') ? `{${s.slice(1)}}` : s)).join('/'),
        methods: route.methods,
      };
    });
  }

  /**
   * The route of `method` and a path already split into segments (decoded or not, as the caller
   * chooses; parameters are returned as given).
   */
  match(method: string, segments: readonly string[]): RouteMatch<THandler> {
    for (const route of this.routes) {
      if (route.segments.length !== segments.length) continue;
      const params: string[] = [];
      const fits = route.segments.every((expected, k) => {
        const actual = segments[k] ?? '';
        if (expected.startsWith(':')) {
          params.push(actual);
          return actual !== '';
        }
        return actual === expected;
      });
      if (!fits) continue;
      const handler = route.methods[method];
      if (handler === undefined) {
        return { kind: 'wrong-method', route: route.name, allowed: Object.keys(route.methods) };
      }
      return { kind: 'found', route: route.name, handler, params };
    }
    return { kind: 'no-route' };
  }
}
