<?php
// Drives the unchanged printformer PHP SDK against a local pps.
// Usage: php drive.php <base_url> <client identifier> <api key> <template identifier>
declare(strict_types=0);
require __DIR__ . '/autoload.php';

use GuzzleHttp\Client as Http;
use Rissc\Printformer\Printformer;
use Rissc\Printformer\Client\BadRequestHandler;
use Rissc\Printformer\Client\Draft\Draft;
use Rissc\Printformer\Client\Workflow\WorkflowSubject;
use Rissc\Printformer\Exceptions\FeatureNotEnabledException;
use Rissc\Printformer\Exceptions\NotFoundException;
use Rissc\Printformer\Exceptions\ValidationException;

[$_, $base, $identifier, $apiKey, $templateId] = $argv + [null, 'http://127.0.0.1:8741', null, null, null];
foreach ([$base, $identifier, $apiKey] as $arg) if (!$arg) { fwrite(STDERR, "usage: php drive.php BASE CLIENT APIKEY [TEMPLATE]\n"); exit(2); }
if (!str_starts_with(parse_url($base, PHP_URL_HOST), '127.') && parse_url($base, PHP_URL_HOST) !== '[::1]') { fwrite(STDERR, "loopback only\n"); exit(2); }

$config = ['base_uri' => $base, 'identifier' => $identifier, 'api_key' => $apiKey];
$pf = new Printformer($config);
$results = [];
$failures = 0;

/** Runs one SDK call; $expect is null (must succeed) or an exception class the call must raise. */
function step(string $name, Closure $call, ?string $expect = null): mixed
{
    global $results, $failures;
    try {
        $value = $call();
        if ($expect !== null) {
            $results[] = ['FAIL', $name, "returned, expected $expect"];
            $failures++;
            return $value;
        }
        $results[] = ['ok', $name, summarize($value)];
        return $value;
    } catch (Throwable $e) {
        $got = get_class($e);
        if ($expect !== null && $e instanceof $expect) {
            $results[] = ['ok', $name, "raised " . short($got) . ": " . substr(str_replace("\n", ' ', $e->getMessage()), 0, 140)];
        } else {
            $results[] = ['FAIL', $name, short($got) . ': ' . substr(str_replace("\n", ' ', $e->getMessage()), 0, 400) . ' @' . basename($e->getFile()) . ':' . $e->getLine()];
            $failures++;
        }
        return null;
    }
}

function check(bool $condition, string $what): void
{
    if (!$condition) throw new RuntimeException("check failed: $what");
}

function short(string $class): string
{
    $at = strrpos($class, '\\');
    return $at === false ? $class : substr($class, $at + 1);
}

function summarize(mixed $value): string
{
    if (is_object($value)) return short(get_class($value));
    if (is_bool($value)) return $value ? 'true' : 'false';
    if (is_array($value)) return substr(json_encode($value), 0, 120);
    if (is_string($value)) return substr($value, 0, 120);
    return gettype($value);
}

/** Fetches a URL without following redirects: [status, Location, body]. */
function raw(string $url, string $method = 'GET'): array
{
    $response = (new Http(['http_errors' => false, 'allow_redirects' => false]))->request($method, $url);
    return [$response->getStatusCode(), $response->getHeaderLine('Location'), (string)$response->getBody(), $response->getHeaderLine('Content-Type')];
}

/** A file URL must be a 302 whose target answers 200 with bytes of the given kind. */
function followFile(string $url, string $kind): string
{
    [$status, $location] = raw($url);
    check($status === 302, "302 for $url, got $status");
    check($location !== '', 'Location');
    $target = str_starts_with($location, 'http') ? $location : (parse_url($url, PHP_URL_SCHEME) . '://' . parse_url($url, PHP_URL_HOST) . ':' . parse_url($url, PHP_URL_PORT) . $location);
    [$s2, , $body, $type] = raw($target);
    check($s2 === 200, "200 from file link, got $s2");
    $magic = ['pdf' => "%PDF", 'png' => "\x89PNG", 'jpeg' => "\xFF\xD8\xFF"];
    $ok = $kind === 'image' ? (str_starts_with($body, $magic['png']) || str_starts_with($body, $magic['jpeg'])) : str_starts_with($body, $magic[$kind]);
    check($ok, "$kind bytes (got " . bin2hex(substr($body, 0, 4)) . ", $type)");
    return "302 -> 200 $type " . strlen($body) . " bytes";
}

$clients = $pf->clientFactory();
$http = new Http([
    'base_uri' => sprintf('%s/api-ext/', $base),
    'headers' => ['Accept' => 'application/json', 'Content-Type' => 'application/json', 'Authorization' => "Bearer $apiKey"],
]);
$handler = new BadRequestHandler();

// --- tenant ---------------------------------------------------------------------------
step('tenant()->show()', function () use ($clients, $identifier) {
    $t = $clients->tenant()->show();
    check($t->identifier === $identifier, 'identifier');
    return "$t->identifier / $t->name / $t->createdAt";
});
step('validateConfiguration() (SDK bug: $config->get on an array)', fn() => $pf->validateConfiguration(), Error::class);

// --- templates ------------------------------------------------------------------------
$templates = step('masterTemplate()->list(1, 200)', function () use ($clients) {
    $p = $clients->masterTemplate()->list(1, 200);
    check(count($p->getData()) > 0, 'some templates');
    return $p;
});
$page1 = step('masterTemplate()->list(0, 1) + paginate()/next()/isLast()', function () use ($clients) {
    $p = $clients->masterTemplate()->list(0, 1);
    $seen = 0;
    foreach ($p->paginate() as $n => $items) $seen += count($items);
    check($seen === $p->getMeta()->total, "paginate saw $seen of {$p->getMeta()->total}");
    if (!$p->isLast()) { $n = $p->next(); check($n->getMeta()->currentPage === 2, 'next page'); $n->previous(); }
    return "total={$p->getMeta()->total} lastPage={$p->getMeta()->lastPage}";
});
if (!$templateId && $templates) $templateId = $templates->getData()[0]->identifier;
$template = step("masterTemplate()->show($templateId)", function () use ($clients, $templateId) {
    $t = $clients->masterTemplate()->show($templateId);
    check(is_array($t->dataKeys) && is_array($t->customAttributes), 'dataKeys/customAttributes');
    return $t;
});
$dataKeys = $template ? $template->dataKeys : [];
$firstKey = null;
foreach ($dataKeys as $k) { $firstKey = is_array($k) ? ($k['identifier'] ?? $k['key'] ?? $k['name'] ?? null) : $k; if ($firstKey) break; }
$results[] = ['info', 'template dataKeys', json_encode($dataKeys)];
step('masterTemplate()->show(unknown) -> 404', fn() => $clients->masterTemplate()->show('zzzzzzzz'), NotFoundException::class);

// --- users ----------------------------------------------------------------------------
$user = step('user()->create([...]) (README shape)', function () use ($clients) {
    $u = $clients->user()->create(['first_name' => 'John', 'last_name' => 'Doe', 'locale' => 'en', 'email' => 'john.doe@example.com']);
    check($u->firstName === 'John' && $u->lastName === 'Doe' && $u->email === 'john.doe@example.com', 'profile fields');
    return $u;
});
$user2 = step('user()->create([]) (empty body)', fn() => $clients->user()->create([]));
step('user()->create camelCase + customAttributes', function () use ($clients) {
    $u = $clients->user()->create(['firstName' => 'Jane', 'lastName' => 'Roe', 'title' => 'Dr.', 'salutation' => 'Ms', 'customAttributes' => ['crm' => '42']]);
    check($u->firstName === 'Jane' && $u->title === 'Dr.' && ($u->customAttributes['crm'] ?? null) === '42', 'fields');
    return $u;
});
step('user()->show()', fn() => $clients->user()->show($user));
step('user()->update()', function () use ($clients, $user) {
    $u = $clients->user()->update($user, ['first_name' => 'Johnny', 'locale' => 'de', 'customAttributes' => ['tier' => 'gold']]);
    check($u->firstName === 'Johnny' && $u->locale === 'de', 'updated');
    return $u;
});
step('user()->show(unknown) -> 404', fn() => $clients->user()->show('nope1234'), NotFoundException::class);
step('user()->create(bad email) -> 422', fn() => $clients->user()->create(['email' => 'not an email']), ValidationException::class);

// --- user groups ----------------------------------------------------------------------
$group = step('userGroup()->create()', fn() => $clients->userGroup()->create());
step('userGroup()->show()', fn() => $clients->userGroup()->show($group->identifier));

// --- themes / variants ----------------------------------------------------------------
$themes = step('theme()->list(1)', fn() => $clients->theme()->list(1));
$variants = step('variant()->list(1, 200)', fn() => $clients->variant()->list(1, 200));
$variantId = $variants && $variants->getData() ? $variants->getData()[0]->id : null;
$results[] = ['info', 'variants', $variants ? json_encode(array_map(fn($v) => [$v->id, $v->identifier, get_class($v->thumbnail)], $variants->getData())) : '-'];

// --- drafts ---------------------------------------------------------------------------
$draft = step('draft()->create() (README array shape)', function () use ($clients, $templateId, $user) {
    $d = $clients->draft()->create(['templateIdentifier' => $templateId, 'user_identifier' => $user->getIdentifier(), 'intent' => 'customize']);
    check(strlen($d->draftHash) === 32, 'hash');
    return $d;
});
$built = step('builderFactory()->draft() minimal (README)', fn() => $pf->builderFactory()->draft()->template($templateId)->user($user->getIdentifier())->intent('customize')->create());
$rich = step('DraftBuilder with every option pps might honour', function () use ($pf, $templateId, $user, $group, $firstKey, $themes, $variantId) {
    $b = $pf->builderFactory()->draft()
        ->template($templateId)->user($user)->userGroup($group)->intent('customize')
        ->apiDefaultValues($firstKey ? [$firstKey => 'From SDK'] : [])
        ->customAttributes(['order' => 'A-1'])
        ->locked(false)->disablePreflight(true)->remoteAcl(false)->pagePlanner(false)
        ->unit('mm');
    if ($themes && $themes->getData()) $b->theme($themes->getData()[0]);
    if ($variantId !== null) $b->variant($variantId);
    $d = $b->create();
    if ($firstKey) check(($d->apiDefaultValues[$firstKey] ?? null) === 'From SDK', 'apiDefaultValues kept');
    check(($d->customAttributes['order'] ?? null) === 'A-1', 'customAttributes kept');
    check($d->userGroupIdentifier === $group->identifier, 'userGroupIdentifier');
    return $d;
});
$design = ' (pps design: 422 naming each option it cannot honour)';
step('DraftBuilder pageFillColor' . $design, fn() => $pf->builderFactory()->draft()->template($templateId)->user($user)->pageFillColor('#ffffff')->create(), ValidationException::class);
step('DraftBuilder pageDimensions/bleedAdditions/addPageDimension' . $design, fn() => $pf->builderFactory()->draft()
    ->template($templateId)->user($user)->intent('customize')
    ->addPageDimension(1, 90.0, 50.0)->bleedAdditions(2.0, 2.0, 2.0, 2.0)->unit('mm')->create(), ValidationException::class);
step('DraftBuilder availableVariants/variantVersion', function () use ($pf, $templateId, $user, $variantId) {
    if ($variantId === null) return 'no variants';
    return $pf->builderFactory()->draft()->template($templateId)->user($user)->intent('customize')
        ->availableVariants([$variantId])->variant($variantId)->variantVersion(1)->availableVariantVersions([1])->create();
});
step('DraftBuilder feed()' . $design, fn() => $pf->builderFactory()->draft()->template($templateId)->user($user)->feed('feed1234')->create(), ValidationException::class);
step('DraftBuilder pagePlanner(true)' . $design, fn() => $pf->builderFactory()->draft()->template($templateId)->user($user)->pagePlanner(true)->create(), ValidationException::class);
step('DraftBuilder declaration()' . $design, fn() => $pf->builderFactory()->draft()->template($templateId)->user($user)->declaration('decl1234')->create(), ValidationException::class);
step('DraftBuilder spineWidth/defaultGroupTemplate/containerContentPreFilling/availableCatalogTemplates' . $design, fn() => $pf->builderFactory()->draft()->template($templateId)->user($user)->spineWidth(3.5)->defaultGroupTemplate('abcdefgh')->addContainerContentPreFilling(1, 'c1', 'cat1')->availableCatalogTemplates(['cat1'])->create(), ValidationException::class);
foreach (['personalize', 'upload', 'upload-and-editor'] as $intent) {
    step("draft()->create intent=$intent", fn() => $clients->draft()->create(['templateIdentifier' => $templateId, 'userIdentifier' => $user->getIdentifier(), 'intent' => $intent]));
}
step('draft()->show()', function () use ($clients, $draft) {
    $d = $clients->draft()->show($draft);
    check($d->draftHash === $draft->draftHash, 'same');
    return "state=$d->state preflight=$d->preflightStatus variant=" . json_encode($d->variant) . ' validation=' . count($d->validationResults);
});
step('draft()->update()', function () use ($clients, $draft, $firstKey) {
    $d = $clients->draft()->update($draft, ['apiDefaultValues' => $firstKey ? [$firstKey => 'Updated'] : [], 'customAttributes' => ['x' => 'y']]);
    check(($d->customAttributes['x'] ?? null) === 'y', 'customAttributes');
    if ($firstKey) check(($d->apiDefaultValues[$firstKey] ?? null) === 'Updated', 'apiDefaultValues');
    return $d;
});
step('draft()->list(1, 200) + paginate()', function () use ($clients) {
    $p = $clients->draft()->list(1, 200);
    $n = 0; foreach ($p->paginate() as $items) $n += count($items);
    return "total={$p->getMeta()->total} seen=$n";
});
step('draft()->list(2, 2)', fn() => $clients->draft()->list(2, 2)->getMeta()->currentPage);
foreach (['print', 'preview'] as $usage) {
    step("draft()->pageInfo($usage)", function () use ($clients, $draft, $usage) {
        $i = $clients->draft()->pageInfo($draft, $usage);
        return "pages=$i->pages dims=" . json_encode($i->dimensions);
    });
}
step('draft()->pageInfo(print, row 1, unit mm)', fn() => json_encode($clients->draft()->pageInfo($draft, 'print', 1, 'mm')->dimensions));
$replica = step('draft()->replicate($draft, [])', function () use ($clients, $draft) {
    $r = $clients->draft()->replicate($draft, []);
    check($r->draftHash !== $draft->draftHash, 'new hash');
    return $r;
});
step('draft()->replicate with apiDefaultValues/customAttributes', function () use ($clients, $draft, $firstKey) {
    $r = $clients->draft()->replicate($draft->draftHash, ['apiDefaultValues' => $firstKey ? [$firstKey => 'Copy'] : [], 'customAttributes' => ['copy' => '1']]);
    check(($r->customAttributes['copy'] ?? null) === '1', 'customAttributes over source');
    if ($firstKey) check(($r->apiDefaultValues[$firstKey] ?? null) === 'Copy', 'apiDefaultValues');
    return $r;
});
step('draft()->show(unknown) -> 404', fn() => $clients->draft()->show(str_repeat('0', 32)), NotFoundException::class);
step('draft()->create(no template) -> 422', fn() => $clients->draft()->create(['user_identifier' => $user->getIdentifier()]), ValidationException::class);
step('draft()->create(unknown template) -> 422/404', function () use ($clients, $user) {
    try { $clients->draft()->create(['templateIdentifier' => 'nope9999', 'user_identifier' => $user->getIdentifier()]); }
    catch (ValidationException $e) { return 'ValidationException ' . json_encode($e->getErrors()); }
    catch (NotFoundException $e) { return 'NotFoundException ' . $e->getMessage(); }
    throw new RuntimeException('no error');
});
step('ValidationException::getErrors() keys spelled as sent', function () use ($clients) {
    try { $clients->draft()->create(['templateIdentifier' => 'x', 'user_identifier' => 'nope1234']); }
    catch (ValidationException $e) { return json_encode($e->getErrors()); }
    catch (NotFoundException $e) { return 'NotFoundException ' . $e->getMessage(); }
    throw new RuntimeException('no error');
});
step('draft()->deliver() -> feature not offered', fn() => $clients->draft()->deliver($draft), FeatureNotEnabledException::class);
step('draft()->products() -> feature not offered', fn() => $clients->draft()->products($draft), FeatureNotEnabledException::class);
step('draft()->requestIdmlPackage() -> feature not offered', fn() => $clients->draft()->requestIdmlPackage($draft, 'http://127.0.0.1:9/cb'), FeatureNotEnabledException::class);

// --- claim / merge --------------------------------------------------------------------
$other = step('draft for user2', fn() => $clients->draft()->create(['templateIdentifier' => $templateId, 'user_identifier' => $user2->getIdentifier()]));
step('draft()->claim(dryRun)', function () use ($clients, $user, $other) {
    $r = $clients->draft()->claim($user, [$other], true);
    check(($r[$other->draftHash] ?? null) === true, 'claimable: ' . json_encode($r));
    check($clients->draft()->show($other)->userIdentifier !== $user->identifier, 'dry run moved nothing');
    return $r;
});
step('draft()->claim()', function () use ($clients, $user, $other) {
    $r = $clients->draft()->claim($user->identifier, [$other->draftHash, str_repeat('1', 32)]);
    check($clients->draft()->show($other)->userIdentifier === $user->identifier, 'moved');
    return $r;
});
$user3 = step('user()->create for merge', fn() => $clients->user()->create(['email' => 'merge@example.com']));
$d3 = step('draft for user3', fn() => $pf->builderFactory()->draft()->template($templateId)->user($user3)->create());
step('user()->merge(target, source)', function () use ($clients, $user, $user3, $d3) {
    $u = $clients->user()->merge($user, $user3);
    check($u->identifier === $user->identifier, 'target');
    check($clients->draft()->show($d3)->userIdentifier === $user->identifier, 'drafts moved');
    return $u;
});
step('user()->show(merged source) -> 404', fn() => $clients->user()->show($user3), NotFoundException::class);

// --- files & variable data -------------------------------------------------------------
$csv = sys_get_temp_dir() . '/sdk-vdata.csv';
$key = $firstKey ?? 'name';
file_put_contents($csv, "col_a,col_b\nAlice,1\nBob,2\nCarol,3\n");
$file = step('file()->create(SplFileInfo csv)', fn() => $clients->file()->create(new SplFileInfo($csv)));
$png = sys_get_temp_dir() . '/sdk-upload.png';
file_put_contents($png, base64_decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='));
step('file()->create(SplFileInfo png)', fn() => $clients->file()->create(new SplFileInfo($png)));
$vd = $clients->variableData($draft);
step('variableData()->create(SplFileInfo, mapping)', fn() => check($vd->create(new SplFileInfo($csv), [$key => 'col_a']) === true, '204') ?? true);
step('variableData()->list(1, 2)', function () use ($vd) {
    $p = $vd->list(1, 2);
    check($p->getMeta()->total === 3 && count($p->getData()) === 2, json_encode($p->getData()) . ' total=' . $p->getMeta()->total);
    $p2 = $p->next();
    check(count($p2->getData()) === 1, 'page 2');
    return $p->getData();
});
step('draft personalizations.amount after variable data', function () use ($clients, $draft) {
    $d = $clients->draft()->show($draft);
    check(($d->personalizations['amount'] ?? null) === 3, json_encode($d->personalizations));
    return $d->personalizations;
});
step('variableData()->create(File, mapping)', fn() => $file ? $clients->variableData($draft->draftHash)->create($file, [$key => 'col_b']) : 'no file');
step('variableData()->create(string id, mapping)', fn() => $file ? $clients->variableData($draft)->create($file->identifier, [$key => 'col_a']) : 'no file');
step('variableData()->update([rows])', fn() => $vd->update([[$key => 'Dave'], [$key => 'Eve']]));
step('variableData()->list(0) after update', fn() => $vd->list(0)->getData());
step('variableData(unknown draft)->list -> 404', fn() => $clients->variableData(str_repeat('2', 32))->list(1), NotFoundException::class);

// --- processing -----------------------------------------------------------------------
$processing = step('processing()->create([drafts], callback)', fn() => $clients->processing()->create([$draft, $built], 'http://127.0.0.1:9/notify'));
step('processing()->create([drafts]) no callback', fn() => $clients->processing()->create([$draft->draftHash]));
if ($processing) {
    step('processing()->show() until processed', function () use ($clients, $processing) {
        for ($i = 0; $i < 60; $i++) {
            $p = $clients->processing()->show($processing);
            $states = array_map(fn($s) => $s->state, $p->draftStates);
            if (!array_diff($states, ['processed', 'failed'])) return json_encode($states);
            usleep(500000);
        }
        throw new RuntimeException('not done: ' . json_encode($states));
    });
}
step('processing()->show(unknown) -> 404', fn() => $clients->processing()->show(str_repeat('a', 32)), NotFoundException::class);

// --- review ---------------------------------------------------------------------------
$review = step('review()->create()', fn() => $clients->review()->create($draft, [$user], 'http://127.0.0.1:9/closed'));
if ($review) {
    step('review()->addUser()', fn() => check($clients->review()->addUser($review, $user2) === true, '204') ?? true);
    step('review()->deleteUser()', fn() => check($clients->review()->deleteUser($review, $user2->identifier) === true, '204') ?? true);
    step('urlGenerator()->review() -> /auth 302 to /review', function () use ($pf, $review, $user, $base) {
        $url = (string)$pf->urlGenerator()->review()->review($review)->user($user);
        [$s, $loc] = raw($url);
        check($s === 302 && str_contains($loc, '/review/' . $review->id), "$s $loc");
        return "$s $loc";
    });
    step('review()->createReviewPDF()', fn() => check($clients->review()->createReviewPDF($review, 'http://127.0.0.1:9/pdf') === true, '204') ?? true);
    step('review()->closeReview()', fn() => check($clients->review()->closeReview($review) === true, '204') ?? true);
}

// --- webhooks (not in the SDK's factory: built by hand from its classes) --------------
$hooks = new \Rissc\Printformer\Client\WebHook\Proxy($handler, new \Rissc\Printformer\Client\WebHook\Client($http));
$hook = step('webhook create()', function () use ($hooks) {
    $h = $hooks->create(['event' => 'draft.finished', 'url' => 'http://127.0.0.1:9/hook']);
    check($h->isOperational(), 'status 0');
    return $h;
});
step('webhook create(unknown event) -> 422', fn() => $hooks->create(['event' => 'nonsense', 'url' => 'http://127.0.0.1:9/hook']), ValidationException::class);
if ($hook) {
    step('webhook show()', fn() => $hooks->show($hook)->status);
    step('webhook list (SDK bug: WebHook\\Client is not a ProvidesListing)', fn() => (new \Rissc\Printformer\Client\WebHook\Client($http))->list(1), TypeError::class);
    step('webhook destroy()', fn() => check($hooks->destroy($hook) === true, '204') ?? true);
}

// --- URLs -----------------------------------------------------------------------------
step('urlGenerator()->editor() full (README) -> /auth 302 to editor', function () use ($pf, $draft, $user, $base) {
    $url = (string)$pf->urlGenerator()->editor()->draft($draft->getIdentifier())
        ->callback('https://shop.example/cb?a=1&b=2')->callbackCancel('https://shop.example/cancel')->callbackHalt('https://shop.example/halt')
        ->user($user->getIdentifier())->step('preview')->locale('de');
    [$s, $loc] = raw($url);
    check($s === 302, "status $s");
    check(str_starts_with($loc, "$base/editor/{$draft->draftHash}/preview"), "Location $loc");
    // The editor itself must open in a browser that only has the session cookie; here: it must not 500.
    return "$s $loc";
});
step('editor URL: draft() with callbacks, no step/locale', function () use ($pf, $draft, $user, $base) {
    $url = (string)$pf->urlGenerator()->editor()->draft($draft, 'https://shop.example/cb')->user($user);
    [$s, $loc] = raw($url);
    check($s === 302 && str_starts_with($loc, "$base/editor/{$draft->draftHash}"), "$s $loc");
    return "$s $loc";
});
step('editor URL: used twice (jti replay) -> refused', function () use ($pf, $draft, $user) {
    $url = (string)$pf->urlGenerator()->editor()->draft($draft, 'https://shop.example/cb')->user($user);
    raw($url);
    [$s] = raw($url);
    check($s >= 400, "second use $s");
    return "second use $s";
});
step('editor URL with step edit, then follow into the editor with cookies', function () use ($pf, $draft, $user, $base) {
    $url = (string)$pf->urlGenerator()->editor()->draft($draft, 'https://shop.example/cb')->user($user)->step('edit');
    // Hops by hand: pps marks its cookie Secure (browsers treat http://127.0.0.1 as secure,
    // Guzzle's cookie jar does not), so the cookie is carried over explicitly.
    $cookie = '';
    for ($hop = 0; $hop < 5; $hop++) {
        $r = (new Http(['http_errors' => false, 'allow_redirects' => false]))->request('GET', $url, ['headers' => $cookie ? ['Cookie' => $cookie] : []]);
        foreach ($r->getHeader('Set-Cookie') as $line) $cookie = explode(';', $line)[0];
        if ($r->getStatusCode() < 300 || $r->getStatusCode() >= 400) break;
        $loc = $r->getHeaderLine('Location');
        $url = str_starts_with($loc, 'http') ? $loc : $base . $loc;
    }
    check($r->getStatusCode() === 200, 'editor page ' . $r->getStatusCode());
    return $r->getStatusCode() . ' ' . $r->getHeaderLine('Content-Type') . ' after ' . $hop . ' redirects';
});
$expires = (new DateTimeImmutable())->modify('+1 hour');
step('draftFiles()->printFile() -> 302 -> PDF', fn() => followFile((string)$pf->urlGenerator()->draftFiles()->printFile($draft->getIdentifier())->expiresAt($expires), 'pdf'));
step('draftFiles()->printFile() with user claim', fn() => followFile((string)$pf->urlGenerator()->draftFiles()->printFile($draft)->user($user)->expiresAt($expires), 'pdf'));
step('draftFiles()->printFile() without expiresAt', fn() => followFile((string)$pf->urlGenerator()->draftFiles()->printFile($draft), 'pdf'));
step('draftFiles()->preview() -> 302 -> PDF', fn() => followFile((string)$pf->urlGenerator()->draftFiles()->preview($draft)->expiresAt($expires), 'pdf'));
step('draftFiles()->image() width/height/page', fn() => followFile((string)$pf->urlGenerator()->draftFiles()->image($draft)->width(300)->height(200)->page(1)->expiresAt($expires), 'image'));
step('draftFiles()->image() usage/row', fn() => followFile((string)$pf->urlGenerator()->draftFiles()->image($draft)->usage('preview')->row(2)->width(200)->expiresAt($expires), 'image'));
step('draftFiles()->printFile() row (variable data)', fn() => followFile((string)$pf->urlGenerator()->draftFiles()->printFile($draft)->row(1)->expiresAt($expires), 'pdf'));
step('draftFiles()->image() for another user -> refused', function () use ($pf, $draft, $user2) {
    [$s] = raw((string)$pf->urlGenerator()->draftFiles()->image($draft)->user($user2)->expiresAt($expires = (new DateTimeImmutable())->modify('+1 hour')));
    check($s >= 400 && $s < 500, "status $s");
    return "status $s";
});
step('templateFiles()->pagePreviewThumb()', fn() => followFile((string)$pf->urlGenerator()->templateFiles()->pagePreviewThumb($templateId)->expiresAt($expires), 'image'));
step('templateFiles()->pagePreviewThumb()->page(1)', fn() => followFile((string)$pf->urlGenerator()->templateFiles()->pagePreviewThumb($templateId)->page(1)->expiresAt($expires), 'image'));
foreach (['variantExport', 'variantThumb', 'photoThumb'] as $m) {
    step("templateFiles()->$m()", function () use ($pf, $templateId, $m, $expires, $variantId) {
        $g = $pf->urlGenerator()->templateFiles()->$m($templateId)->expiresAt($expires);
        if ($variantId) $g->variantVersionID($variantId);
        [$s, $loc, $body] = raw((string)$g);
        if ($s === 302) return followFile((string)$pf->urlGenerator()->templateFiles()->$m($templateId)->expiresAt($expires), 'image');
        check($s === 403 && isset(json_decode($body, true)['message']), "status $s body " . substr($body, 0, 200));
        return "$s " . json_decode($body, true)['message'];
    });
}
foreach ([
    'draftFiles()->idmlPackage()' => fn() => (string)$pf->urlGenerator()->draftFiles()->idmlPackage($draft),
    'draftFiles()->x3d()' => fn() => (string)$pf->urlGenerator()->draftFiles()->x3d($draft),
    'templateFiles()->threeDeeTexture()' => fn() => (string)$pf->urlGenerator()->templateFiles()->threeDeeTexture($templateId, 1),
    'derivativeFiles()->file()->page()' => fn() => (string)$pf->urlGenerator()->derivativeFiles()->file('deriv123')->page(1),
] as $name => $make) {
    step("$name -> 403 JSON", function () use ($make) {
        [$s, , $body] = raw($make());
        check($s === 403 && isset(json_decode($body, true)['message']), "status $s body " . substr($body, 0, 200));
        return "$s " . json_decode($body, true)['message'];
    });
}
step('tokenBuilder() (public) -> /auth with only a redirect', function () use ($pf, $user, $base, $draft) {
    $t = $pf->tokenBuilder();
    $t->client = 'ignored-overwritten';
    return 'built ' . strlen((string)$t);
});

// --- edge probes ----------------------------------------------------------------------
step('templateFiles()->pagePreviewThumb()->variantVersionID()', fn() => followFile((string)$pf->urlGenerator()->templateFiles()->pagePreviewThumb($templateId)->variantVersionID($variantId ?? 1)->expiresAt($expires), 'image'));
step('draftFiles()->image() usage print', fn() => followFile((string)$pf->urlGenerator()->draftFiles()->image($draft)->usage('print')->expiresAt($expires), 'image'));
step('draftFiles() expired token -> 4xx JSON', function () use ($pf, $draft) {
    [$s, , $body, $type] = raw((string)$pf->urlGenerator()->draftFiles()->printFile($draft)->expiresAt((new DateTimeImmutable())->modify('-1 hour')));
    check($s >= 400 && $s < 500 && isset(json_decode($body, true)['message']), "$s $type");
    return "$s " . json_decode($body, true)['message'];
});
step('draftFiles()->image() of an upload draft without upload -> JSON error', function () use ($pf, $clients, $templateId, $user) {
    $d = $clients->draft()->create(['templateIdentifier' => $templateId, 'user_identifier' => $user->identifier, 'intent' => 'upload']);
    [$s, , $body, $type] = raw((string)$pf->urlGenerator()->draftFiles()->image($d));
    check($s !== 500 && ($s === 302 || isset(json_decode($body, true)['message'])), "$s $type " . substr($body, 0, 100));
    return "$s " . substr($body, 0, 120);
});
step('processing with an upload draft lacking its PDF: failed + message', function () use ($clients, $templateId, $user, $draft) {
    $d = $clients->draft()->create(['templateIdentifier' => $templateId, 'user_identifier' => $user->identifier, 'intent' => 'upload']);
    $p = $clients->processing()->create([$d, $draft]);
    for ($i = 0; $i < 60; $i++) {
        $p = $clients->processing()->show($p);
        $states = array_map(fn($s) => [$s->state, $s->message], $p->draftStates);
        if (!array_diff(array_column($states, 0), ['processed', 'failed'])) return json_encode($states);
        usleep(500000);
    }
    throw new RuntimeException('not done');
});
step('draft()->pageInfo(unknown usage) -> SDK exception', function () use ($clients, $draft) {
    try { $clients->draft()->pageInfo($draft, 'nonsense'); }
    catch (ValidationException | NotFoundException $e) { return short(get_class($e)) . ' ' . str_replace("\n", '', $e->getMessage()); }
    throw new RuntimeException('no error');
});
step('draft()->pageInfo(print, row 9999) -> SDK exception or ok', function () use ($clients, $draft) {
    try { return json_encode($clients->draft()->pageInfo($draft, 'print', 9999)->pages); }
    catch (ValidationException | NotFoundException $e) { return short(get_class($e)) . ' ' . str_replace("\n", '', $e->getMessage()); }
});
step('draft()->pageInfo(print, unit px)', fn() => json_encode($clients->draft()->pageInfo($draft, 'print', null, 'px')->dimensions));
step('review()->create(remoteAcl true) -> 422 (pps has no remote ACL for reviews)', fn() => $clients->review()->create($draft->draftHash, [$user->identifier], 'http://127.0.0.1:9/closed', true), ValidationException::class);
step('editor URL step embed', function () use ($pf, $draft, $user, $base) {
    [$s, $loc] = raw((string)$pf->urlGenerator()->editor()->draft($draft, 'https://shop.example/cb')->user($user)->step('embed')->locale('en'));
    check($s === 302 && str_contains($loc, '/embed'), "$s $loc");
    return "$s";
});
step('editor URL without user claim', function () use ($pf, $draft) {
    [$s, $loc, $body] = raw((string)$pf->urlGenerator()->editor()->draft($draft, 'https://shop.example/cb'));
    return "$s " . ($loc ?: substr($body, 0, 120));
});
step('draft()->update(unknown) -> 404', fn() => $clients->draft()->update(str_repeat('4', 32), ['customAttributes' => []]), NotFoundException::class);
step('draft()->replicate(unknown) -> 404', fn() => $clients->draft()->replicate(str_repeat('5', 32), []), NotFoundException::class);
step('user()->merge(unknown source) -> SDK exception', function () use ($clients, $user) {
    try { $clients->user()->merge($user, 'nope1234'); }
    catch (ValidationException | NotFoundException $e) { return short(get_class($e)) . ' ' . str_replace("\n", '', $e->getMessage()); }
    throw new RuntimeException('no error');
});
step('userGroup()->show(unknown) -> 404', fn() => $clients->userGroup()->show('nope1234'), NotFoundException::class);
step('review()->addUser(unknown review) -> 404', fn() => $clients->review()->addUser('nope1234', $user), NotFoundException::class);
step('variableData()->create(unknown file) -> 422', fn() => $clients->variableData($draft)->create('nofile12', ['a' => 'b']), ValidationException::class);
step('processing()->create([unknown draft]) -> error or failed state', function () use ($clients) {
    try { return json_encode($clients->processing()->create([str_repeat('6', 32)])->draftStates); }
    catch (ValidationException | NotFoundException $e) { return short(get_class($e)) . ' ' . str_replace("\n", '', $e->getMessage()); }
    throw new RuntimeException('no error');
});

// --- features pps does not offer ------------------------------------------------------
step('workflow()->create()', fn() => $clients->workflow()->create('def', WorkflowSubject::fromResource($draft)), FeatureNotEnabledException::class);
step('workflow()->show()', fn() => $clients->workflow()->show('wf123456'), FeatureNotEnabledException::class);
step('workflow()->update()', fn() => $clients->workflow()->update('wf123456', []), FeatureNotEnabledException::class);
step('feed()->create()', fn() => $clients->feed()->create(['name' => 'x']), FeatureNotEnabledException::class);
step('builderFactory()->feed()->...->create()', fn() => $pf->builderFactory()->feed()->name('n')->url('https://shop.example/feed.csv')->shouldReplicate(true)->config([])->create(), FeatureNotEnabledException::class);
step('feed()->show()', fn() => $clients->feed()->show('feed1234'), FeatureNotEnabledException::class);
step('feed()->update()', fn() => $clients->feed()->update('feed1234', []), FeatureNotEnabledException::class);
step('feed()->destroy()', fn() => $clients->feed()->destroy('feed1234'), FeatureNotEnabledException::class);
step('derivative(draft)->list()', fn() => $clients->derivative($draft)->list(1), FeatureNotEnabledException::class);
step('derivative(template)->list()', fn() => $clients->derivative($template)->list(1), FeatureNotEnabledException::class);
step('derivative()->show()', fn() => $clients->derivative($draft)->show('deriv123'), FeatureNotEnabledException::class);
step('declaration()->list()', fn() => $clients->declaration()->list(1), FeatureNotEnabledException::class);
step('declaration()->show()', fn() => $clients->declaration()->show('decl1234'), FeatureNotEnabledException::class);
step('ingredient()->list()', fn() => $clients->ingredient()->list(1), FeatureNotEnabledException::class);
step('ingredient()->show()', fn() => $clients->ingredient()->show('ingr1234'), FeatureNotEnabledException::class);
step('util()->reAssemble()', fn() => $clients->util()->reAssemble([$draft->draftHash], 'http://127.0.0.1:9/cb'), FeatureNotEnabledException::class);
step('util()->optimize()', fn() => $clients->util()->optimize('file1234', 'http://127.0.0.1:9/cb', 300), FeatureNotEnabledException::class);

// --- ACL handler (shop side, no HTTP) -------------------------------------------------
step('acl() handler answers allowAction', function () use ($pf) {
    $req = new ArrayObject(['actions' => [['action' => 'draft.view', 'userIdentifier' => 'u', 'entityType' => 'draft', 'entityIdentifier' => 'd']]]);
    $out = $pf->acl()($req, fn($a) => $a->action === 'draft.view');
    check($out[0]['allowAction'] === true, 'allowAction');
    return $out;
});

// --- auth errors ----------------------------------------------------------------------
step('wrong API key -> Guzzle ClientException 401 (SDK has no mapping)', fn() => (new Printformer(['api_key' => str_repeat('x', 40)] + $config))->clientFactory()->tenant()->show(), \GuzzleHttp\Exception\ClientException::class);

// --- delete ---------------------------------------------------------------------------
step('draft()->destroy()', fn() => check($clients->draft()->destroy($replica ?? $built) === true, '204') ?? true);
step('draft()->destroy(unknown) -> 404', fn() => $clients->draft()->destroy(str_repeat('3', 32)), NotFoundException::class);
step('user()->destroy()', fn() => check($clients->user()->destroy($user2) === true, '204') ?? true);

foreach ($results as [$status, $name, $detail]) printf("%-5s %s :: %s\n", $status, $name, $detail);
printf("\n%d calls, %d failed\n", count(array_filter($results, fn($r) => $r[0] !== 'info')), $failures);
exit($failures ? 1 : 0);
