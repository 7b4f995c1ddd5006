<?php
// Loads the PHP SDK and lcobucci/jwt from the checkouts named by PPS_SDK_DIR and
// PPS_JWT_DIR, and Guzzle from Debian's php-guzzlehttp-* packages (see README.md).
set_include_path('/usr/share/php' . PATH_SEPARATOR . get_include_path());
require_once '/usr/share/php/GuzzleHttp/autoload.php';
$roots = [
    'Rissc\\Printformer\\' => getenv('PPS_SDK_DIR') . '/src/',
    'Lcobucci\\JWT\\' => getenv('PPS_JWT_DIR') . '/src/',
];
spl_autoload_register(static function (string $class) use ($roots): void {
    foreach ($roots as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) require $file;
            return;
        }
    }
});
